// The client against a real `make run`: both modes, every memory operation the agent uses, errors.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, it } from "node:test";

import { NotFound, Synapse, SynapseError, TransportError, ValidationFailed } from "../dist/index.js";
import { collect, newMind, NO_STACK } from "./support.mjs";

describe("the client against make run", { skip: NO_STACK }, () => {
  it("stores, reads, updates and deletes a memory as an agent, and a person sees it", async () => {
    const mind = await newMind();
    const stored = await mind.agent.remember({
      category: "preference",
      key: "editor",
      content: "Uses Helix, not Vim",
      tags: ["tools"],
      priority: "high",
    });
    assert.equal(stored.source, "agent");
    assert.equal(stored.version, 1);

    const seen = await mind.person.get(stored.id);
    assert.equal(seen.content, "Uses Helix, not Vim");
    assert.deepEqual(seen.tags, ["tools"]);

    const changed = await mind.agent.update(stored.id, { content: "Uses Zed now", ifMatch: 1 });
    assert.equal(changed.version, 2);
    assert.equal((await mind.agent.find("preference", "editor")).content, "Uses Zed now");

    assert.equal(await mind.agent.forget(stored.id), null);
    await assert.rejects(mind.agent.get(stored.id), NotFound);
  });

  it("stores content alone as a note whose key the server derives, once for the same text", async () => {
    const mind = await newMind();
    const first = await mind.agent.remember({ content: "Walks to work" });
    assert.equal(first.category, "note");
    assert.equal(first.key, "walks_work_cf7811"); // the server's derivation (tests/unit/test_memory_keys.py)
    assert.equal(first.key_derived, true);
    const again = await mind.agent.remember({ content: "walks  TO work" });
    assert.equal(again.id, first.id);
    assert.equal(again.version, 2);
  });

  it("a person verifies, reads history and restores an earlier version", async () => {
    const mind = await newMind();
    const first = await mind.person.remember({ category: "fact", key: "city", content: "Lives in Porto" });
    await mind.person.update(first.id, { content: "Lives in Lisbon" });
    const verified = await mind.person.verify(first.id);
    assert.equal(verified.verified, true);

    const revisions = await collect(mind.person.iterHistory(first.id, { limit: 1 }));
    assert.ok(revisions.length >= 2, JSON.stringify(revisions));
    const restored = await mind.person.restore(first.id, 1);
    assert.equal(restored.content, "Lives in Porto");
  });

  it("stores a batch and lists it page after page", async () => {
    const mind = await newMind();
    const memories = Array.from({ length: 7 }, (_, n) => ({
      category: "note",
      key: `item_${n}`,
      content: `Batch item number ${n}`,
      tags: ["batch"],
    }));
    const answer = await mind.agent.rememberBatch(memories, { idempotencyKey: "batch-test-1" });
    assert.equal(answer.summary.created, 7);
    assert.deepEqual(
      answer.results.map((r) => r.index),
      [0, 1, 2, 3, 4, 5, 6],
    );

    const first = await mind.agent.listMemories({ limit: 3 });
    assert.equal(first.items.length, 3);
    assert.ok(first.nextCursor);
    const all = await collect(mind.agent.iterMemories({ limit: 3 }));
    assert.deepEqual(all.map((m) => m.key).sort(), memories.map((m) => m.key).sort());
    const tagged = await collect(mind.person.iterByTag("batch", { limit: 2 }));
    assert.equal(tagged.length, 7);
  });

  it("recalls as text and as JSON, and searches", async () => {
    const mind = await newMind();
    const kept = await mind.agent.remember({
      category: "identity",
      key: "name",
      content: "The user is called Ottilie Brandt",
      priority: "critical",
    });
    await mind.agent.remember({ category: "skill", key: "deploy", content: "Deploys with sam deploy --guided" });

    const recalled = await mind.agent.recall({ query: "what is my name" });
    assert.match(recalled, /Ottilie Brandt/);
    const asJson = await mind.agent.recallJson({ category: ["identity", "skill"] });
    assert.ok(asJson.memories.some((m) => m.id === kept.id));
    assert.equal(asJson.total, 2);

    let hits = [];
    for (let tries = 0; tries < 50 && hits.length === 0; tries++) {
      hits = (await mind.agent.search("Ottilie")).items;
      if (hits.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(hits[0].memory.id, kept.id);
    const page = await mind.agent.search("deploy guided");
    assert.ok(Array.isArray(page.terms));
  });

  it("carries the error envelope: status, code, message, details, request id", async () => {
    const mind = await newMind();
    const missing = await mind.agent.get("no-such-memory").catch((error) => error);
    assert.ok(missing instanceof NotFound && missing instanceof SynapseError);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "not_found");
    assert.ok(missing.message.length > 0);
    assert.ok(missing.requestId, "a 404 names its request id");

    const invalid = await mind.agent
      .remember({ category: "note", key: "bad", content: "x", priority: "urgent" })
      .catch((error) => error);
    assert.ok(invalid instanceof ValidationFailed);
    assert.equal(invalid.status, 422);
    assert.equal(invalid.code, "validation_error");
    assert.ok(invalid.details.some((d) => JSON.stringify(d).includes("priority")), JSON.stringify(invalid.details));
  });

  it("refuses a person's memory call without a mind id, and an agent's mind management", async () => {
    const mind = await newMind();
    const noMind = new Synapse({ url: process.env.SYNAPSE_URL, token: process.env.SYNAPSE_JWT });
    assert.equal((await noMind.getMind(mind.id)).id, mind.id);
    await assert.rejects(noMind.getMind(), (error) => error.code === "mind_id_required");
    await assert.rejects(mind.agent.createMind("not allowed"), (error) => error.status === 403);
  });
});

describe("the client without a server", () => {
  it("throws a TransportError (status 0) when nothing answers", async () => {
    const client = new Synapse({ url: "http://127.0.0.1:9", mindKey: "mk_x", retry: { attempts: 1, backoff: 0 } });
    const failed = await client.get("m").catch((error) => error);
    assert.ok(failed instanceof TransportError);
    assert.equal(failed.status, 0);
  });

  it("asks what a memory may replace, and reads a model failure", async () => {
    // Given a loopback server naming one older memory, then saying its model failed
    const older = { id: "mem_old", key: "coffee_old", similarity: 0.71, relation: "related", memory: { id: "mem_old" } };
    const answers = [{ id: "mem_coffee", similar: [older] }, { id: "mem_coffee", similar_unavailable: true }];
    const seen = [];
    const server = createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(answers.shift()));
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const client = new Synapse({ url: `http://127.0.0.1:${server.address().port}`, mindKey: "mk_x" });
    try {
      // When the client asks twice
      const found = await client.similar("mem_coffee");
      const failed = await client.similar("mem_coffee");
      // Then it asked GET /memory/{id}/similar, and read the candidate, then the failure
      assert.deepEqual(seen, ["GET /memory/mem_coffee/similar", "GET /memory/mem_coffee/similar"]);
      assert.equal(found.similar[0].relation, "related");
      assert.equal(found.similar[0].memory.id, "mem_old");
      assert.equal(failed.similar_unavailable, true);
    } finally {
      server.close();
    }
  });

  it("needs exactly one credential", () => {
    assert.throws(() => new Synapse({ url: "http://127.0.0.1:9" }), TypeError);
    assert.throws(() => new Synapse({ url: "http://127.0.0.1:9", mindKey: "a", token: "b" }), TypeError);
  });
});
