// Retries, against a small loopback server that answers what each test scripts (429, 503, …): the
// rules are the client's, so the real service is not needed here. Waits are recorded, not slept.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";

import { RateLimited, Retry, ServerError, Synapse } from "../dist/index.js";

let server;
let base;
let script = [];
let requests = [];

before(async () => {
  server = createServer((request, response) => {
    requests.push({ method: request.method, url: request.url, headers: request.headers });
    request.resume();
    const [status, headers, body] = script.shift() ?? [200, {}, { ok: true }];
    response.writeHead(status, { "Content-Type": "application/json", ...headers });
    response.end(JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => new Promise((resolve) => server.close(resolve)));

function client(options = {}) {
  const waits = [];
  requests = [];
  const sleep = async (ms) => {
    waits.push(ms);
  };
  return { waits, synapse: new Synapse({ url: base, mindKey: "mk_test", sleep, ...options }) };
}

const limited = (seconds) => [429, { "Retry-After": String(seconds) }, { error: { code: "rate_limited", message: "Slow down" } }];
const unavailable = [503, {}, { error: { code: "unavailable", message: "Try later" }, request_id: "req-1" }];
const memory = { id: "m1", key: "k", content: "c" };

describe("retries", () => {
  it("waits as long as a 429's Retry-After says, then succeeds", async () => {
    const { waits, synapse } = client();
    script = [limited(2), [200, {}, memory]];
    const got = await synapse.get("m1");
    assert.equal(got.id, "m1");
    assert.equal(requests.length, 2);
    assert.equal(waits.length, 1);
    assert.ok(waits[0] >= 2000 && waits[0] <= 2500, String(waits[0]));
    assert.equal(requests[0].headers.authorization, "Bearer mk_test");
  });

  it("retries a 429 even for a POST without an idempotency key", async () => {
    const { synapse } = client();
    script = [limited(0), [201, {}, { mind: {}, mind_key: {} }]];
    await synapse.createMind("x");
    assert.equal(requests.length, 2);
  });

  it("gives up after the bounded attempts with the last error's fields", async () => {
    const { waits, synapse } = client({ retry: new Retry({ attempts: 2 }) });
    script = [limited(1), limited(1), limited(1), limited(1)];
    const failed = await synapse.get("m1").catch((error) => error);
    assert.ok(failed instanceof RateLimited);
    assert.equal(failed.retryAfter, 1);
    assert.equal(failed.code, "rate_limited");
    assert.equal(requests.length, 3);
    assert.equal(waits.length, 2);
  });

  it("does not wait longer than maxWait", async () => {
    const { synapse } = client({ retry: { maxWait: 5 } });
    script = [limited(120)];
    await assert.rejects(synapse.get("m1"), RateLimited);
    assert.equal(requests.length, 1);
  });

  it("retries a 503 on GET with backoff, not on a POST without an idempotency key", async () => {
    const reading = client();
    script = [unavailable, [200, {}, memory]];
    await reading.synapse.get("m1");
    assert.equal(requests.length, 2);

    const writing = client();
    script = [unavailable];
    const failed = await writing.synapse.rememberBatch([{ content: "x" }]).catch((error) => error);
    assert.ok(failed instanceof ServerError);
    assert.equal(failed.status, 503);
    assert.equal(failed.requestId, "req-1");
    assert.equal(requests.length, 1);
  });

  it("retries a 503 on a batch that carries an Idempotency-Key, sending the same key", async () => {
    const { synapse } = client();
    script = [unavailable, [200, {}, { results: [], summary: {} }]];
    await synapse.rememberBatch([{ content: "x" }], { idempotencyKey: "import-1" });
    assert.deepEqual(
      requests.map((r) => r.headers["idempotency-key"]),
      ["import-1", "import-1"],
    );
  });

  it("reads Retry-After as an HTTP date too", async () => {
    const { waits, synapse } = client();
    const soon = new Date(Date.now() + 3000).toUTCString();
    script = [[429, { "Retry-After": soon }, {}], [200, {}, memory]];
    await synapse.get("m1");
    assert.ok(waits[0] > 0 && waits[0] <= 4000, String(waits[0]));
  });

  it("sends a person's mind as X-Mind-Id and list filters as query parameters", async () => {
    const waits = [];
    requests = [];
    const person = new Synapse({ url: base, token: "jwt", mindId: "m 1", sleep: async (ms) => waits.push(ms) });
    script = [[200, {}, "text"], [200, {}, { id: "m 1" }]];
    await person.recall({ category: ["fact", "skill"], query: "hello", maxChars: 500 });
    await person.getMind();
    assert.equal(requests[0].headers["x-mind-id"], "m 1");
    assert.equal(requests[0].url, "/memory/recall?category=fact&category=skill&max_chars=500&q=hello");
    assert.equal(requests[1].url, "/minds/m%201");
  });

  it("sends the asker's now and zone on search and recall", async () => {
    const { synapse } = client();
    const late = new Date(Date.UTC(2026, 11, 7, 23, 30)); // a fixed now: Monday in UTC, Tuesday in Berlin
    script = [[200, {}, { results: [], terms: [] }], [200, {}, "Mind: M\n"], [200, {}, { results: [], terms: [] }]];
    await synapse.search("What is on today?", { now: late, tz: "Europe/Berlin" });
    await synapse.recall({ now: "2026-12-03", tz: "Europe/Berlin" });
    await synapse.search("What is on today?");
    const sent = requests.map((r) => new URL(r.url, base).searchParams);
    assert.deepEqual(
      sent.map((p) => [p.get("now"), p.get("tz")]),
      [["2026-12-07T23:30:00.000Z", "Europe/Berlin"], ["2026-12-03", "Europe/Berlin"], [null, null]],
    );
  });

  it("says at once that nothing listens on a dead port, without waiting through retries", async () => {
    const closed = createServer();
    await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    const waits = [];
    const nowhere = new Synapse({ url: `http://127.0.0.1:${port}`, mindKey: "mk_test", sleep: async (ms) => waits.push(ms) });
    await assert.rejects(nowhere.get("m1"), /Could not reach/);
    assert.deepEqual(waits, []);
  });
});
