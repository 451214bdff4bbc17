// The docs' self-contained TypeScript examples, run as written against a real `make run`: every
// ```ts block of docs/agents.md and of this package's README that builds its own client (with the
// placeholder address "http://127.0.0.1:3000"). Only the address, the Mind Key placeholder and the
// package name are swapped (for the runner's, a fresh mind's key and the built dist/); fragments
// that use variables defined elsewhere (`url`, `jwt`, `model`…) are not run.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { NO_STACK, URL as BASE, newMind } from "./support.mjs";

const PACKAGE = fileURLToPath(new globalThis.URL("..", import.meta.url));
const SOURCES = [join(PACKAGE, "..", "..", "docs", "agents.md"), join(PACKAGE, "README.md")];
const PLACEHOLDER = '"http://127.0.0.1:3000"';

function examples(path) {
  const text = readFileSync(path, "utf8");
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).filter((code) => code.includes(PLACEHOLDER));
}

function runnable(code, mindKey) {
  const dist = (name) => JSON.stringify(pathToFileURL(join(PACKAGE, "dist", name)).href);
  return code
    .replaceAll('"@synapse-memory/client/ai"', dist("ai.js"))
    .replaceAll('"@synapse-memory/client"', dist("index.js"))
    .replaceAll(PLACEHOLDER, JSON.stringify(BASE))
    .replaceAll('"mk_…"', JSON.stringify(mindKey));
}

describe("the docs' examples", { skip: NO_STACK }, () => {
  for (const source of SOURCES) {
    it(`every self-contained example of ${source.split("/").slice(-2).join("/")} runs`, async () => {
      const found = examples(source);
      assert.ok(found.length > 0, `no self-contained example in ${source}`);
      const folder = mkdtempSync(join(tmpdir(), "synapse-docs-"));
      for (const [n, code] of found.entries()) {
        const mind = await newMind("Docs example");
        const file = join(folder, `example-${n}.mjs`);
        writeFileSync(file, runnable(code, mind.key));
        await import(pathToFileURL(file).href);
        assert.ok((await mind.person.listMemories()).items.length > 0, `example ${n} stored nothing`);
      }
    });
  }
});
