/**
 * Synapse as memory for the Vercel AI SDK: `synapseTools({ url, mindKey })` gives `remember`,
 * `recall`, `search` and `forget` as AI SDK tools, with the MCP tools' own descriptions and input
 * schemas (src/mcp-tools.ts, generated from the shared mcp_tools.json) and the same behaviour
 * (a memory stored without a category is a note; without a key, the server derives one from its content).
 * `ai` is a peer dependency: this entry point is `@synapse-memory/client/ai`.
 */

import { jsonSchema, tool } from "ai";

import { Synapse, type SynapseOptions } from "./client.js";
import { INSTRUCTIONS, TOOLS } from "./mcp-tools.js";
import type { Category, Memory, Priority } from "./types.js";

export { INSTRUCTIONS, TOOLS };

const RECALL_QUERY_MAX = 1000;

export interface RememberInput {
  content: string;
  category?: Category;
  key?: string;
  tags?: string[];
  priority?: Priority;
  confidence?: number;
  expires_at?: string;
  occurred_at?: string;
  /** Ids of older memories this one replaces. */
  supersedes?: string[];
}
export interface RecallInput {
  query?: string;
  category?: Category[];
  tag?: string;
  max_chars?: number;
  after?: string;
  before?: string;
  now?: string;
  tz?: string;
}
export interface SearchInput {
  query: string;
  tag?: string;
  category?: Category;
  limit?: number;
  mode?: "hybrid" | "lexical" | "semantic";
  after?: string;
  before?: string;
  now?: string;
  tz?: string;
}
export interface ForgetInput {
  id?: string;
  category?: Category;
  key?: string;
}

function shown(memory: Memory): Record<string, unknown> {
  if (!memory.pending_proposal) return { ...memory };
  const note =
    "A person verified this memory, so this change waits for their review " +
    `(proposal ${memory.pending_proposal}); until then the memory stays as shown.`;
  return { ...memory, note };
}

/** `remember`: store one memory (without a category a note, without a key one the server derives). */
export async function remember(client: Synapse, input: RememberInput): Promise<Record<string, unknown>> {
  return shown(await client.remember(input));
}

const LEFT_OUT = /^(\d+ more memor(?:y|ies)) left out; GET \/memory\/search finds (it|them)\.$/;

/**
 * Recall text whose closing `… left out; GET /memory/search finds them.` names the model's own way
 * on, the search tool, instead of a REST route it cannot call (as /mcp's recall says it).
 */
export function namingSearchTool(text: string): string {
  const lines = text.replace(/\n+$/, "").split("\n");
  const found = LEFT_OUT.exec(lines[lines.length - 1] ?? "");
  if (found === null) return text;
  lines[lines.length - 1] = `${found[1]} left out; the search tool finds ${found[2]}.`;
  return lines.join("\n") + "\n";
}

/** `recall`: the plain-text recall, the memories most relevant to `query` first. */
export async function recall(client: Synapse, input: RecallInput): Promise<string> {
  const query = (input.query ?? "").trim().slice(0, RECALL_QUERY_MAX) || undefined;
  const options = {
    query,
    category: input.category,
    tag: input.tag,
    maxChars: input.max_chars,
    after: input.after,
    before: input.before,
    now: input.now,
    tz: input.tz,
  };
  return namingSearchTool(await client.recall(options));
}

/** `search`: the results with how much of the question each matched, and how close each is in meaning. */
export async function search(client: Synapse, input: SearchInput): Promise<Record<string, unknown>> {
  const options = {
    tag: input.tag,
    category: input.category,
    limit: input.limit ?? 10,
    mode: input.mode,
    after: input.after,
    before: input.before,
    now: input.now,
    tz: input.tz,
  };
  const found = await client.search(input.query, options);
  const results = found.items.map((hit) => ({
    id: hit.memory.id,
    category: hit.memory.category,
    key: hit.memory.key,
    snippet: hit.snippet,
    content: hit.memory.content,
    tags: hit.memory.tags,
    score: hit.score,
    matched: hit.matched,
    coverage: hit.coverage,
    similarity: hit.similarity,
    relevance: hit.relevance,
    updated_at: hit.memory.updated_at,
    occurred_at: hit.memory.occurred_at,
  }));
  return { terms: found.terms, mode: found.mode, results }; // as REST and /mcp name the list
}

/** `forget`: delete a memory by id, or by category and key. */
export async function forget(client: Synapse, input: ForgetInput): Promise<Record<string, unknown>> {
  const { category, key } = input;
  let id = input.id;
  if (!id) {
    if (!(category && key)) throw new Error("id: give the memory's id, or both its category and key");
    const found = await client.find(category, key);
    if (found === null) throw new Error(`No memory ${category}/${key} in this mind.`);
    id = found.id;
  }
  const proposed = await client.forget(id);
  if (proposed !== null) {
    const { note, ...memory } = shown(proposed);
    return { memory, note: note ?? "" };
  }
  return { deleted: id, ...(category && key ? { category, key } : {}) };
}

export type SynapseToolsOptions = SynapseOptions | { client: Synapse };

/** The AI SDK tools over one Synapse client: pass `{ url, mindKey }` (or a person's) or `{ client }`. */
export function synapseTools(options: SynapseToolsOptions) {
  const client = "client" in options ? options.client : new Synapse(options);
  const spec = <Name extends keyof typeof TOOLS>(name: Name) => ({
    description: TOOLS[name].description,
    // The MCP table's JSON Schema, as the model sees it; Synapse validates the values.
    schema: TOOLS[name].inputSchema as unknown as Parameters<typeof jsonSchema>[0],
  });
  const r = spec("remember");
  const c = spec("recall");
  const s = spec("search");
  const f = spec("forget");
  return {
    remember: tool({
      description: r.description,
      inputSchema: jsonSchema<RememberInput>(r.schema),
      execute: (input: RememberInput) => remember(client, input),
    }),
    recall: tool({
      description: c.description,
      inputSchema: jsonSchema<RecallInput>(c.schema),
      execute: (input: RecallInput) => recall(client, input),
    }),
    search: tool({
      description: s.description,
      inputSchema: jsonSchema<SearchInput>(s.schema),
      execute: (input: SearchInput) => search(client, input),
    }),
    forget: tool({
      description: f.description,
      inputSchema: jsonSchema<ForgetInput>(f.schema),
      execute: (input: ForgetInput) => forget(client, input),
    }),
  };
}
