// Export a mind to JSON Lines and import the file into an empty mind: every memory comes back, but
// the expired ones, which an import skips and counts (a write may not set an expiry in the past).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { exportMemories, importRecords, readLines } from "../dist/index.js";
import { collect, newMind, NO_STACK } from "./support.mjs";

const COMPARED = ["category", "key", "content", "tags", "priority", "confidence", "expires_at"];

async function snapshot(client) {
  const memories = await collect(client.iterMemories({ includeExpired: true, limit: 100 }));
  return Object.fromEntries(
    memories.map((m) => [`${m.category}/${m.key}`, Object.fromEntries(COMPARED.map((f) => [f, m[f]]))]),
  );
}

describe("export and import", { skip: NO_STACK }, () => {
  it("round-trips a mind through JSON Lines, skipping expired memories, and a second import replaces", async () => {
    // Given a mind of 130 memories, 33 of them expiring as they are stored (an expiry of now)
    const source = await newMind("export source");
    const now = new Date().toISOString();
    const memories = Array.from({ length: 130 }, (_, n) => ({
      category: ["fact", "note", "context"][n % 3],
      key: `memory_${n}`,
      content: `Memory ${n}: Schäfer's note № ${n}`,
      priority: ["critical", "high", "normal", "low"][n % 4],
      confidence: (n % 10) / 10,
      ...(n % 2 ? { tags: [`tag_${n % 5}`] } : {}),
      ...(n % 4 === 1 ? { expires_at: now } : {}),
    }));
    await source.person.rememberBatch(memories.slice(0, 100));
    await source.person.rememberBatch(memories.slice(100));

    let text = "";
    const count = await exportMemories(source.agent, (line) => {
      text += line;
    });
    assert.equal(count, 130);
    assert.equal(text.split("\n").filter(Boolean).length, 130);

    // When the export (expired ones too) is imported into an empty mind
    const target = await newMind("import target");
    const seen = [];
    const report = await importRecords(target.agent, readLines(text), (total) => seen.push(total));
    // Then the live ones are created and the expired ones skipped and counted, none failed
    assert.deepEqual([report.created, report.skippedExpired, report.failed], [97, 33, 0]);
    assert.deepEqual(seen, [130]);
    const live = Object.fromEntries(
      Object.entries(await snapshot(source.agent)).filter(([, m]) => m.expires_at === undefined || m.expires_at === null),
    );
    assert.deepEqual(await snapshot(target.agent), live);

    // And a second import replaces them, skipping the same ones
    const again = await importRecords(target.agent, readLines(text.split(/(?<=\n)/)));
    assert.deepEqual([again.created, again.replaced, again.skippedExpired], [0, 97, 33]);
  });

  it("names the line that is not JSON", async () => {
    await assert.rejects(collect(readLines('{"a": 1}\nnot json\n')), /line 2: not JSON/);
  });
});
