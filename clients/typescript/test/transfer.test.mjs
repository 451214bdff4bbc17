// Export a mind to JSON Lines and import the file into an empty mind: every memory comes back.
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
  it("round-trips a mind through JSON Lines, and a second import replaces", async () => {
    const source = await newMind("export source");
    const memories = Array.from({ length: 130 }, (_, n) => ({
      category: ["fact", "note", "context"][n % 3],
      key: `memory_${n}`,
      content: `Memory ${n}: Schäfer's note № ${n}`,
      priority: ["critical", "high", "normal", "low"][n % 4],
      confidence: (n % 10) / 10,
      ...(n % 2 ? { tags: [`tag_${n % 5}`] } : {}),
      ...(n % 4 === 1 ? { expires_at: "2020-01-01T00:00:00Z" } : {}),
    }));
    await source.person.rememberBatch(memories.slice(0, 100));
    await source.person.rememberBatch(memories.slice(100));

    let text = "";
    const count = await exportMemories(source.agent, (line) => {
      text += line;
    });
    assert.equal(count, 130);
    assert.equal(text.split("\n").filter(Boolean).length, 130);

    const target = await newMind("import target");
    const seen = [];
    const report = await importRecords(target.agent, readLines(text), (total) => seen.push(total));
    assert.equal(report.created, 130);
    assert.equal(report.failed, 0);
    assert.deepEqual(seen, [100, 130]);
    assert.deepEqual(await snapshot(target.agent), await snapshot(source.agent));

    const again = await importRecords(target.agent, readLines(text.split(/(?<=\n)/)));
    assert.equal(again.replaced + again.created, 130);
    assert.equal(again.created, 0);
  });

  it("names the line that is not JSON", async () => {
    await assert.rejects(collect(readLines('{"a": 1}\nnot json\n')), /line 2: not JSON/);
  });
});
