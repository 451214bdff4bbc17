// The Vercel AI SDK tools, driven end to end by the AI SDK's own mock language model against a
// real `make run`: the model calls remember, recall, search and forget; the SDK runs the tools.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";

import { Synapse } from "../dist/index.js";
import { namingSearchTool, synapseTools } from "../dist/ai.js";
import { newMind, NO_STACK } from "./support.mjs";

const TABLE = JSON.parse(readFileSync(new URL("../../python/src/synapse_client/mcp_tools.json", import.meta.url)));
const MCP = Object.fromEntries(TABLE.tools.map((tool) => [tool.name, tool]));
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A model that calls one tool per step, in `calls` order, then answers with text. */
function scripted(calls) {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async () => {
      const call = calls[step++];
      if (!call) {
        return { content: [{ type: "text", text: "done" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      }
      const [toolName, input] = call;
      return {
        content: [{ type: "tool-call", toolCallId: `call_${step}`, toolName, input: JSON.stringify(input) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage,
        warnings: [],
      };
    },
  });
}

describe("synapseTools", () => {
  it("shares each tool's description and input schema with the MCP tools", () => {
    const tools = synapseTools({ url: "http://127.0.0.1:9", mindKey: "mk_x" });
    assert.deepEqual(Object.keys(tools), ["remember", "recall", "search", "forget"]);
    for (const [name, made] of Object.entries(tools)) {
      assert.equal(made.description, MCP[name].description);
      assert.deepEqual(made.inputSchema.jsonSchema, MCP[name].inputSchema);
    }
  });

  it("names the search tool in recall's closing line", async () => {
    // recall's closing line names the tool the model has, not a REST route
    const cut = "Mind: M\n\n[001] fact (NORMAL) [verified]\n  k\n  c\n\n11 more memories left out; GET /memory/search finds them.\n";
    assert.ok(namingSearchTool(cut).endsWith("\n11 more memories left out; the search tool finds them.\n"));
    assert.equal(namingSearchTool("Mind: M\n"), "Mind: M\n");
  });

  it("passes the asker's now and zone on to search and recall", async () => {
    // a client whose fetch notes each URL and answers as an empty mind would
    const urls = [];
    const fetch = async (input) => {
      urls.push(new URL(String(input)));
      const recall = urls.at(-1).pathname === "/memory/recall";
      const body = recall ? "Mind: M\n" : JSON.stringify({ results: [], terms: [] });
      return new Response(body, { status: 200, headers: { "Content-Type": recall ? "text/plain" : "application/json" } });
    };
    const tools = synapseTools({ client: new Synapse({ url: "http://synapse.test", mindKey: "mk_x", fetch }) });
    await tools.search.execute({ query: "What is on today?", now: "2026-12-07T23:30:00Z", tz: "Europe/Berlin" }, {});
    await tools.recall.execute({ now: "2026-12-03", tz: "Europe/Berlin" }, {});
    assert.deepEqual(
      urls.map((u) => [u.pathname, u.searchParams.get("now"), u.searchParams.get("tz")]),
      [
        ["/memory/search", "2026-12-07T23:30:00Z", "Europe/Berlin"],
        ["/memory/recall", "2026-12-03", "Europe/Berlin"],
      ],
    );
  });

  it("lets a model remember, recall, search and forget", { skip: NO_STACK }, async () => {
    const mind = await newMind("AI SDK tools");
    const tools = synapseTools({ url: process.env.SYNAPSE_URL, mindKey: mind.key });
    const model = scripted([
      ["remember", { content: "The user's favourite tea is Darjeeling", category: "preference", key: "favourite_tea" }],
      ["remember", { content: "Prefers window seats" }],
      ["recall", { query: "what tea should I make?" }],
    ]);
    const first = await generateText({ model, tools, prompt: "Remember my tea", stopWhen: stepCountIs(5) });
    const results = first.steps.flatMap((step) => step.toolResults);
    assert.equal(results.length, 3);
    assert.equal(results[0].output.key, "favourite_tea");
    assert.equal(results[1].output.category, "note");
    // the key is the server's derivation (the values of tests/unit/test_memory_keys.py)
    assert.match(results[1].output.key, /^prefers_window_seats_[0-9a-f]{6}$/);
    assert.equal(results[1].output.key_derived, true);
    assert.match(results[2].output, /Darjeeling/);
    assert.equal(first.text, "done");

    let hits = [];
    for (let tries = 0; tries < 50 && hits.length === 0; tries++) {
      const searched = await generateText({
        model: scripted([["search", { query: "Darjeeling" }]]),
        tools,
        prompt: "Which tea?",
        stopWhen: stepCountIs(3),
      });
      hits = searched.steps.flatMap((step) => step.toolResults)[0].output.results;
      if (hits.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(hits[0].key, "favourite_tea");

    const forgot = await generateText({
      model: scripted([["forget", { category: "preference", key: "favourite_tea" }]]),
      tools,
      prompt: "Forget my tea",
      stopWhen: stepCountIs(3),
    });
    const output = forgot.steps.flatMap((step) => step.toolResults)[0].output;
    assert.deepEqual(output, { deleted: results[0].output.id, category: "preference", key: "favourite_tea" });
    assert.equal(await mind.agent.find("preference", "favourite_tea"), null);
  });
});
