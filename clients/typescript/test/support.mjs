// Shared by the tests: the runner's address and a person's JWT from the environment (the pytest
// wrapper tests/clients/test_typescript_client.py sets them), and a fresh mind per test.
import { Synapse } from "../dist/index.js";

export const URL = process.env.SYNAPSE_URL;
export const JWT = process.env.SYNAPSE_JWT;
/** Why the live tests cannot run here, or false. */
export const NO_STACK = !URL || !JWT ? "set SYNAPSE_URL and SYNAPSE_JWT (a running `make run`)" : false;

/** A new mind with a client for its agent (Mind Key) and for its person (JWT + mind id). */
export async function newMind(name = "TS client test") {
  const owner = new Synapse({ url: URL, token: JWT });
  const made = await owner.createMind(name);
  return {
    id: made.mind.id,
    key: made.mind_key.key,
    agent: new Synapse({ url: URL, mindKey: made.mind_key.key }),
    person: new Synapse({ url: URL, token: JWT, mindId: made.mind.id }),
  };
}

export async function collect(iterable) {
  const all = [];
  for await (const item of iterable) all.push(item);
  return all;
}
