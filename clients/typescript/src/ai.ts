/**
 * Synapse as memory for the Vercel AI SDK: `synapseTools({ url, mindKey })` gives `remember`,
 * `recall`, `search` and `forget` as AI SDK tools, with the MCP tools' own descriptions and input
 * schemas (src/mcp-tools.ts, generated from the shared mcp_tools.json) and the same behaviour
 * (a memory stored without a category is a note; without a key, one is derived from its content).
 * `ai` is a peer dependency: this entry point is `@synapse-memory/client/ai`.
 */

import { jsonSchema, tool } from "ai";

import { Synapse, type SynapseOptions } from "./client.js";
import { INSTRUCTIONS, TOOLS } from "./mcp-tools.js";
import type { Category, Memory, Priority } from "./types.js";

export { INSTRUCTIONS, TOOLS };

const KEY_DIGEST_CHARS = 6;
const KEY_WORDS = 5;
const KEY_WORD_CHARS = 20;
// Words that say little in a key: the same list as the layer's (synapse.mcp.calls.KEY_STOPWORDS).
const KEY_STOPWORDS = new Set(
  `a an the and or but of to in on at for with from by is are was were be been am i my me he him his she her
  they them their it its we our you your this that these those has have had do does did not so as than
  then there here will would can could should just very also about into`.split(/\s+/),
);
const RECALL_QUERY_MAX = 1000;

type Subtle = { digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer> };

async function subtle(): Promise<Subtle> {
  const platform = (globalThis as { crypto?: { subtle?: Subtle } }).crypto?.subtle;
  if (platform) return platform;
  const name = "node:crypto"; // Node 18 has Web Crypto, not yet as a global
  return ((await import(/* @vite-ignore */ name)) as { webcrypto: { subtle: Subtle } }).webcrypto.subtle;
}

/**
 * The key of a memory stored without one, as /mcp derives it: its first meaningful words and a short
 * digest of the whole text. The same text (case and spacing aside) gives the same key, so storing it
 * twice keeps one memory.
 */
export async function derivedKey(category: string, content: string): Promise<string> {
  const normalized = content.split(/\s+/).filter(Boolean).join(" ").toUpperCase().toLowerCase();
  const digest = await (await subtle()).digest("SHA-256", new TextEncoder().encode(normalized));
  const hex = Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
  const plain = normalized.normalize("NFKD").replace(/[^\x00-\x7f]/g, "");
  const words = (plain.match(/[a-z0-9]+/g) ?? [])
    .filter((word) => !KEY_STOPWORDS.has(word))
    .map((word) => word.slice(0, KEY_WORD_CHARS));
  return `${words.slice(0, KEY_WORDS).join("_") || category}_${hex.slice(0, KEY_DIGEST_CHARS)}`;
}

export interface RememberInput {
  content: string;
  category?: Category;
  key?: string;
  tags?: string[];
  priority?: Priority;
  confidence?: number;
  expires_at?: string;
}
export interface RecallInput {
  query?: string;
  category?: Category[];
  tag?: string;
  max_chars?: number;
}
export interface SearchInput {
  query: string;
  tag?: string;
  category?: Category;
  limit?: number;
  mode?: "hybrid" | "lexical" | "semantic";
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

/** `remember`: store one memory (category `note` and a derived key by default). */
export async function remember(client: Synapse, input: RememberInput): Promise<Record<string, unknown>> {
  const category = input.category ?? "note";
  const key = input.key ?? (await derivedKey(category, input.content));
  return shown(await client.remember({ ...input, category, key }));
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
  const options = { query, category: input.category, tag: input.tag, maxChars: input.max_chars };
  return namingSearchTool(await client.recall(options));
}

/** `search`: the hits with how much of the question each matched, and how close each is in meaning. */
export async function search(client: Synapse, input: SearchInput): Promise<Record<string, unknown>> {
  const options = { tag: input.tag, category: input.category, limit: input.limit ?? 10, mode: input.mode };
  const found = await client.search(input.query, options);
  const hits = found.items.map((hit) => ({
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
  }));
  return { terms: found.terms, mode: found.mode, hits };
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
