/**
 * `Synapse`: one method per API operation, sent with the client's credential and retried on
 * 429/502/503/504 as `Retry` allows; `iter*` methods are async iterators following `next_cursor`.
 *
 *     const agent = new Synapse({ url, mindKey: "mk_…" });            // an agent: its key's mind
 *     const person = new Synapse({ url, token: jwt, mindId: "m_…" }); // a person: X-Mind-Id names it
 */

import {
  type Call,
  Credentials,
  errorFrom,
  escape,
  json,
  MIND,
  nothing,
  type Page,
  page,
  type Params,
  queryString,
  Retry,
  type RetryOptions,
  text,
  unreachable,
} from "./core.js";
import type {
  AuditEvent,
  BatchAnswer,
  Delivery,
  Hook,
  HookWithSecret,
  Memory,
  MemoryInput,
  MemoryWrite,
  Mind,
  MindKey,
  NewKey,
  NewMind,
  Proposal,
  ProposalDecision,
  RecallJson,
  Revision,
  SimilarNow,
  SearchResult,
  TestOutcome,
  Webhook,
  WebhookWithSecret,
} from "./types.js";

export const DEFAULT_TIMEOUT_MS = 30_000;

export interface SynapseOptions {
  /** The API's base URL, e.g. https://api.example.com or http://127.0.0.1:3000. */
  url: string;
  /** An agent's Mind Key (its mind is the key's). */
  mindKey?: string;
  /** A person's JWT; give `mindId` for the memory calls. */
  token?: string;
  /** The mind a person addresses (sent as X-Mind-Id). */
  mindId?: string;
  retry?: Retry | RetryOptions;
  /** Per request, in milliseconds (default 30 s). */
  timeoutMs?: number;
  /** The fetch to use (default: the platform's). */
  fetch?: typeof fetch;
  /** How to wait between tries (default: setTimeout); for tests and custom schedulers. */
  sleep?: (ms: number) => Promise<void>;
}

export type Categories = string | string[];

export interface ListOptions {
  limit?: number;
  cursor?: string;
}
export interface MemoryFilter extends ListOptions {
  category?: string;
  tag?: string;
  priority?: string;
  source?: string;
  verified?: boolean;
  includeExpired?: boolean;
  /** From this date ("2026-12-01", from its start in UTC) or timestamp with a zone on, by event time (occurred_at, else created_at); newest event first. */
  after?: string;
  /** Up to this date (its whole day) or timestamp, by event time. */
  before?: string;
  /** What changed since this date or timestamp, newest change first. */
  updatedAfter?: string;
  /** Also memories a newer one replaced (marked `superseded_by`). */
  includeSuperseded?: boolean;
}
/** A time window on each memory's occurred_at, else created_at: dates or timestamps with a zone, inclusive. */
export interface TimeWindow {
  after?: string;
  before?: string;
}
/**
 * The asker's clock, which time words ("next week", "on Friday") and recall's "Coming up" count from:
 * `now` replays another moment (a date "2026-12-03", a timestamp with its zone, or a Date), `tz` is
 * the user's IANA zone ("Europe/Berlin"; UTC by default), which decides which day today is.
 */
export interface AskerClock {
  now?: string | Date;
  tz?: string;
}
export interface RecallOptions extends TimeWindow, AskerClock {
  category?: Categories;
  tag?: string;
  limit?: number;
  maxChars?: number;
  /** The user's message or the task (≤ 1000 characters): the most relevant memories come right after the critical ones. */
  query?: string;
}
export interface ByTagOptions extends ListOptions, TimeWindow {
  category?: Categories;
  includeExpired?: boolean;
  includeSuperseded?: boolean;
}
export interface ExpiringOptions extends ListOptions {
  /** A window such as "24h" or "7d". */
  within?: string;
  includeSuperseded?: boolean;
}
/** How a best-match query is ranked: words and meaning fused, words only, meaning only. */
export type SearchMode = "hybrid" | "lexical" | "semantic";
export interface SearchOptions extends ListOptions, TimeWindow, AskerClock {
  tag?: string;
  category?: string;
  priority?: string;
  includeExpired?: boolean;
  includeSuperseded?: boolean;
  mode?: SearchMode;
}
export interface SearchPage extends Page<SearchResult> {
  /** The terms the query was read as. */
  terms: string[];
  /** How the page was ranked (null: an older server). */
  mode: SearchMode | null;
}
export interface UpdateFields {
  content?: string;
  tags?: string[];
  priority?: string;
  confidence?: number;
  /** null clears it. */
  expiresAt?: string | null;
  /** When the event happened or was said (a date or a timestamp with a zone); null clears it. */
  occurredAt?: string | null;
  /** The version the change is based on (If-Match): a stale one fails with 412. */
  ifMatch?: number;
  /** Ids of older memories this one replaces: kept, marked `superseded_by`, out of recall and search. */
  supersedes?: string[];
}
export interface ProposalFilter extends ListOptions {
  status?: string;
  memoryId?: string;
  category?: string;
}
export interface MindSettingsPatch {
  name?: string;
  agentWritesToVerified?: string;
  agentWritesCritical?: string;
  historyRetentionDays?: number;
}

const sleeper = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function categories(category: Categories | undefined): string[] | undefined {
  if (category === undefined) return undefined;
  return typeof category === "string" ? [category] : [...category];
}

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

/** A write's answer: the memory, or (202) the memory as it stays while the write waits for review. */
async function stored(response: Response): Promise<Memory> {
  const body = (await response.json()) as Record<string, unknown>;
  return (response.status === 202 ? body.memory : body) as Memory;
}

/** null: deleted (204). A memory (202): an agent's delete of a verified memory waits as a proposal. */
async function forgotten(response: Response): Promise<Memory | null> {
  return response.status === 202 ? stored(response) : nothing(response);
}

async function searchPage(response: Response): Promise<SearchPage> {
  const body = (await response.json()) as {
    results: SearchResult[];
    next_cursor?: string | null;
    terms?: string[];
    mode?: SearchMode;
  };
  return {
    items: body.results,
    nextCursor: body.next_cursor ?? null,
    terms: (body.terms ?? []).map(String),
    mode: body.mode ?? null,
  };
}

/** `now=` as sent: a Date as its ISO 8601 timestamp (UTC), a string as given. */
function moment(now: string | Date | undefined): string | undefined {
  return now instanceof Date ? now.toISOString() : now;
}

function recallParams(options: RecallOptions): Params {
  return {
    category: categories(options.category),
    tag: options.tag,
    limit: options.limit,
    max_chars: options.maxChars,
    q: options.query || undefined,
    after: options.after,
    before: options.before,
    now: moment(options.now),
    tz: options.tz,
  };
}

export class Synapse {
  readonly url: string;
  readonly credentials: Credentials;
  readonly retry: Retry;
  readonly timeoutMs: number;
  private readonly fetcher: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: SynapseOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.credentials = new Credentials(options.mindKey, options.token, options.mindId);
    this.retry = options.retry instanceof Retry ? options.retry : new Retry(options.retry);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.fetcher = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.sleep = options.sleep ?? sleeper;
  }

  get mindId(): string | undefined {
    return this.credentials.mindId;
  }

  /** Send one call (retrying as `retry` allows) and read its answer, or throw a `SynapseError`. */
  async send<T>(call: Call<T>): Promise<T> {
    const url = this.url + this.credentials.path(call.path) + queryString(call.params);
    const headers: Record<string, string> = { ...this.credentials.headers(), ...call.headers };
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    if (body !== undefined) headers["Content-Type"] = "application/json";
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), this.timeoutMs);
      try {
        response = await this.fetcher(url, { method: call.method, headers, body, signal: abort.signal });
      } catch (error) {
        clearTimeout(timer);
        const pause = this.retry.afterFailure(call, attempt, error);
        if (pause === null) throw unreachable(this.url, error);
        await this.sleep(pause * 1000);
        continue;
      }
      let delay: number | null;
      try {
        delay = this.retry.delay(call, attempt, response);
        if (delay === null) {
          if (response.ok) return await call.parse(response);
          throw await errorFrom(response);
        }
        await response.body?.cancel(); // free the connection before the next try
      } finally {
        clearTimeout(timer);
      }
      await this.sleep(delay * 1000);
    }
  }

  /** Every item of a list, page after page, from `cursor` if given. */
  async *pages<T>(build: (cursor: string | undefined) => Call<Page<T>>, cursor?: string): AsyncGenerator<T> {
    let next = cursor;
    for (;;) {
      const found = await this.send(build(next));
      yield* found.items;
      if (!found.nextCursor) return;
      next = found.nextCursor;
    }
  }

  private mind(mindId?: string): string {
    return mindId ? escape(mindId) : MIND;
  }

  // ---------------------------------------------------------------- memories (Mind Key or JWT)

  /**
   * Store a memory (`POST /memory`): created, or replaced when (category, key) exists. An agent's
   * change to a verified memory may wait for review: then the memory comes back unchanged, its
   * `pending_proposal` naming the proposal. `supersedes`: ids of older memories this one replaces.
   */
  remember(memory: MemoryInput): Promise<Memory> {
    return this.send({ method: "POST", path: "/memory", parse: stored, body: defined(memory), idempotent: true });
  }

  /** Store 1-100 memories in one request (`POST /memory/batch`): one result per item, in order. */
  rememberBatch(memories: Partial<MemoryWrite>[], options: { idempotencyKey?: string } = {}): Promise<BatchAnswer> {
    const key = options.idempotencyKey;
    return this.send({
      method: "POST",
      path: "/memory/batch",
      parse: json<BatchAnswer>,
      body: { memories },
      headers: key ? { "Idempotency-Key": key } : {},
      idempotent: Boolean(key),
    });
  }

  /** One memory by id (`GET /memory/{id}`), expired ones included. */
  get(memoryId: string): Promise<Memory> {
    return this.send({ method: "GET", path: `/memory/${escape(memoryId)}`, parse: json<Memory> });
  }

  /** Change some fields (`PUT /memory/{id}`); `expiresAt: null` or `occurredAt: null` clears it. */
  update(memoryId: string, fields: UpdateFields): Promise<Memory> {
    const { ifMatch, expiresAt, occurredAt, ...rest } = fields;
    return this.send({
      method: "PUT",
      path: `/memory/${escape(memoryId)}`,
      parse: stored,
      body: defined({ ...rest, expires_at: expiresAt, occurred_at: occurredAt }),
      headers: ifMatch === undefined ? {} : { "If-Match": String(ifMatch) },
    });
  }

  /** Delete a memory for good (`DELETE /memory/{id}`): null, or the memory when the delete awaits review. */
  forget(memoryId: string): Promise<Memory | null> {
    return this.send({ method: "DELETE", path: `/memory/${escape(memoryId)}`, parse: forgotten });
  }

  /** A person vouches for a memory (`POST /memory/{id}/verify`; JWT only). */
  verify(memoryId: string): Promise<Memory> {
    const path = `/memory/${escape(memoryId)}/verify`;
    return this.send({ method: "POST", path, parse: json<Memory>, idempotent: true });
  }

  private listCall(filter: MemoryFilter): Call<Page<Memory>> {
    const params: Params = {
      category: filter.category,
      tag: filter.tag,
      priority: filter.priority,
      source: filter.source,
      verified: filter.verified,
      include_expired: filter.includeExpired || undefined,
      after: filter.after,
      before: filter.before,
      updated_after: filter.updatedAfter,
      include_superseded: filter.includeSuperseded || undefined,
      limit: filter.limit,
      cursor: filter.cursor,
    };
    return { method: "GET", path: "/memory", parse: page<Memory>("memories"), params };
  }

  /** One page of memories, newest first (`GET /memory`). */
  listMemories(filter: MemoryFilter = {}): Promise<Page<Memory>> {
    return this.send(this.listCall(filter));
  }

  iterMemories(filter: MemoryFilter = {}): AsyncGenerator<Memory> {
    return this.pages((cursor) => this.listCall({ ...filter, cursor }), filter.cursor);
  }

  /** The memory stored under (category, key), expired ones included, or null (reads the category). */
  async find(category: string, key: string): Promise<Memory | null> {
    for await (const memory of this.iterMemories({ category, includeExpired: true, limit: 100 })) {
      if (memory.key === key) return memory;
    }
    return null;
  }

  /** Delete the memory stored under (category, key); returns it, or null when there was none. */
  async forgetKey(category: string, key: string): Promise<Memory | null> {
    const found = await this.find(category, key);
    if (found !== null) await this.forget(found.id);
    return found;
  }

  /** The plain-text recall an agent pulls into its context (`GET /memory/recall`). */
  recall(options: RecallOptions = {}): Promise<string> {
    return this.send({ method: "GET", path: "/memory/recall", parse: text, params: recallParams(options) });
  }

  /** Recall's selection as JSON; with `query`, `relevant` lists the ids placed for it. */
  recallJson(options: RecallOptions = {}): Promise<RecallJson> {
    const params = { ...recallParams(options), format: "json" };
    return this.send({ method: "GET", path: "/memory/recall", parse: json<RecallJson>, params });
  }

  private byTagCall(tag: string, options: ByTagOptions): Call<Page<Memory>> {
    const params: Params = {
      tag,
      category: categories(options.category),
      include_expired: options.includeExpired || undefined,
      after: options.after,
      before: options.before,
      include_superseded: options.includeSuperseded || undefined,
      limit: options.limit,
      cursor: options.cursor,
    };
    return { method: "GET", path: "/memory/by-tag", parse: page<Memory>("memories"), params };
  }

  /** Memories carrying a tag, in recall order (`GET /memory/by-tag`). */
  byTag(tag: string, options: ByTagOptions = {}): Promise<Page<Memory>> {
    return this.send(this.byTagCall(tag, options));
  }

  iterByTag(tag: string, options: ByTagOptions = {}): AsyncGenerator<Memory> {
    return this.pages((cursor) => this.byTagCall(tag, { ...options, cursor }), options.cursor);
  }

  private expiringCall(options: ExpiringOptions): Call<Page<Memory>> {
    const params = {
      within: options.within,
      limit: options.limit,
      cursor: options.cursor,
      include_superseded: options.includeSuperseded || undefined,
    };
    return { method: "GET", path: "/memory/expiring", parse: page<Memory>("memories"), params };
  }

  /** Memories expiring within a window such as "24h" or "7d", soonest first. */
  expiring(options: ExpiringOptions = {}): Promise<Page<Memory>> {
    return this.send(this.expiringCall(options));
  }

  iterExpiring(options: ExpiringOptions = {}): AsyncGenerator<Memory> {
    return this.pages((cursor) => this.expiringCall({ ...options, cursor }), options.cursor);
  }

  private searchCall(query: string, options: SearchOptions): Call<SearchPage> {
    const params: Params = {
      q: query,
      tag: options.tag,
      category: options.category,
      priority: options.priority,
      include_expired: options.includeExpired || undefined,
      after: options.after,
      before: options.before,
      include_superseded: options.includeSuperseded || undefined,
      now: moment(options.now),
      tz: options.tz,
      limit: options.limit,
      cursor: options.cursor,
      mode: options.mode,
    };
    return { method: "GET", path: "/memory/search", parse: searchPage, params };
  }

  /**
   * Search by words and meaning, best match first (`GET /memory/search`): a question in the agent's
   * own words or keywords ("who is his partner?" finds "Wife is Anna"); "a phrase", prefix*, AND, OR,
   * NOT keep their exact meaning. `mode`: hybrid (default), lexical or semantic. Each hit has
   * `matched`, `coverage` and `similarity`. New writes show up after indexing. Time words in the
   * query favour the memories dated then, counted from `now` in `tz` (`AskerClock`).
   */
  search(query: string, options: SearchOptions = {}): Promise<SearchPage> {
    return this.send(this.searchCall(query, options));
  }

  iterSearch(query: string, options: SearchOptions = {}): AsyncGenerator<SearchResult> {
    return this.pages((cursor) => this.searchCall(query, { ...options, cursor }), options.cursor);
  }

  /**
   * The older memories a memory may replace, most similar first, against the index as it is now
   * (`GET /memory/{id}/similar`): each `repeat` or `related`, with the memory itself; mark one
   * replaced with `update(id, { supersedes: [older] })`. `similar_unavailable` when the model failed.
   */
  similar(memoryId: string): Promise<SimilarNow> {
    const path = `/memory/${escape(memoryId)}/similar`;
    return this.send({ method: "GET", path, parse: json<SimilarNow> });
  }

  // ---------------------------------------------------------------- history and proposals

  private historyCall(memoryId: string, options: ListOptions): Call<Page<Revision>> {
    const path = `/memory/${escape(memoryId)}/history`;
    const params = { limit: options.limit, cursor: options.cursor };
    return { method: "GET", path, parse: page<Revision>("revisions"), params };
  }

  /** A memory's revisions, newest first (`GET /memory/{id}/history`). */
  history(memoryId: string, options: ListOptions = {}): Promise<Page<Revision>> {
    return this.send(this.historyCall(memoryId, options));
  }

  iterHistory(memoryId: string, options: ListOptions = {}): AsyncGenerator<Revision> {
    return this.pages((cursor) => this.historyCall(memoryId, { ...options, cursor }), options.cursor);
  }

  /** Bring back an earlier version as a new one (`POST /memory/{id}/restore`; JWT only). */
  restore(memoryId: string, version: number): Promise<Memory> {
    const path = `/memory/${escape(memoryId)}/restore`;
    return this.send({ method: "POST", path, parse: json<Memory>, body: { version } });
  }

  private proposalsCall(filter: ProposalFilter): Call<Page<Proposal>> {
    const params: Params = {
      status: filter.status,
      memory_id: filter.memoryId,
      category: filter.category,
      limit: filter.limit,
      cursor: filter.cursor,
    };
    return { method: "GET", path: "/proposals", parse: page<Proposal>("proposals"), params };
  }

  /** Agents' proposed changes to verified memories, newest first (`GET /proposals`). */
  listProposals(filter: ProposalFilter = {}): Promise<Page<Proposal>> {
    return this.send(this.proposalsCall(filter));
  }

  iterProposals(filter: ProposalFilter = {}): AsyncGenerator<Proposal> {
    return this.pages((cursor) => this.proposalsCall({ ...filter, cursor }), filter.cursor);
  }

  getProposal(proposalId: string): Promise<Proposal> {
    return this.send({ method: "GET", path: `/proposals/${escape(proposalId)}`, parse: json<Proposal> });
  }

  /** Apply a pending proposal as a new, verified version (JWT only). */
  acceptProposal(proposalId: string): Promise<ProposalDecision> {
    const path = `/proposals/${escape(proposalId)}/accept`;
    return this.send({ method: "POST", path, parse: json<ProposalDecision> });
  }

  /** Turn a pending proposal down, leaving the memory as it is (JWT only). */
  rejectProposal(proposalId: string): Promise<ProposalDecision> {
    const path = `/proposals/${escape(proposalId)}/reject`;
    return this.send({ method: "POST", path, parse: json<ProposalDecision> });
  }

  // ---------------------------------------------------------------- minds and keys (JWT only)

  /** A new mind and its first Mind Key (`POST /minds`); the key's secret is shown this once. */
  createMind(name: string): Promise<NewMind> {
    return this.send({ method: "POST", path: "/minds", parse: json<NewMind>, body: { name } });
  }

  private mindsCall(options: ListOptions): Call<Page<Mind>> {
    const params = { limit: options.limit, cursor: options.cursor };
    return { method: "GET", path: "/minds", parse: page<Mind>("minds"), params };
  }

  /** The caller's minds, oldest first (`GET /minds`). */
  listMinds(options: ListOptions = {}): Promise<Page<Mind>> {
    return this.send(this.mindsCall(options));
  }

  iterMinds(options: ListOptions = {}): AsyncGenerator<Mind> {
    return this.pages((cursor) => this.mindsCall({ ...options, cursor }), options.cursor);
  }

  /** One mind; by default the client's. */
  getMind(mindId?: string): Promise<Mind> {
    return this.send({ method: "GET", path: `/minds/${this.mind(mindId)}`, parse: json<Mind> });
  }

  /** Rename a mind or change its settings (`PATCH /minds/{mind_id}`). */
  updateMind(patch: MindSettingsPatch, mindId?: string): Promise<Mind> {
    const body = defined({
      name: patch.name,
      agent_writes_to_verified: patch.agentWritesToVerified,
      agent_writes_critical: patch.agentWritesCritical,
      history_retention_days: patch.historyRetentionDays,
    });
    const path = `/minds/${this.mind(mindId)}`;
    return this.send({ method: "PATCH", path, parse: json<Mind>, body, idempotent: true });
  }

  /** Delete a mind with its keys, memories, hooks and index. */
  deleteMind(mindId: string): Promise<null> {
    return this.send({ method: "DELETE", path: `/minds/${escape(mindId)}`, parse: nothing });
  }

  /** A new Mind Key; its secret (`key`) is shown this once. */
  createKey(options: { label?: string; scopes?: string[] } = {}, mindId?: string): Promise<NewKey> {
    const path = `/minds/${this.mind(mindId)}/keys`;
    return this.send({ method: "POST", path, parse: json<NewKey>, body: defined(options) });
  }

  private keysCall(mindId: string | undefined, options: ListOptions): Call<Page<MindKey>> {
    const params = { limit: options.limit, cursor: options.cursor };
    return { method: "GET", path: `/minds/${this.mind(mindId)}/keys`, parse: page<MindKey>("keys"), params };
  }

  /** A mind's keys, without secrets. */
  listKeys(options: ListOptions = {}, mindId?: string): Promise<Page<MindKey>> {
    return this.send(this.keysCall(mindId, options));
  }

  iterKeys(options: ListOptions = {}, mindId?: string): AsyncGenerator<MindKey> {
    return this.pages((cursor) => this.keysCall(mindId, { ...options, cursor }), options.cursor);
  }

  /** Revoke a Mind Key, effective on its next request. */
  revokeKey(keyId: string, mindId?: string): Promise<null> {
    const path = `/minds/${this.mind(mindId)}/keys/${escape(keyId)}`;
    return this.send({ method: "DELETE", path, parse: nothing });
  }

  private auditCall(mindId: string | undefined, options: ListOptions): Call<Page<AuditEvent>> {
    const params = { limit: options.limit, cursor: options.cursor };
    const path = `/minds/${this.mind(mindId)}/audit`;
    return { method: "GET", path, parse: page<AuditEvent>("events"), params };
  }

  /** Who changed the mind's keys, hooks, webhooks and settings. */
  audit(options: ListOptions = {}, mindId?: string): Promise<Page<AuditEvent>> {
    return this.send(this.auditCall(mindId, options));
  }

  iterAudit(options: ListOptions = {}, mindId?: string): AsyncGenerator<AuditEvent> {
    return this.pages((cursor) => this.auditCall(mindId, { ...options, cursor }), options.cursor);
  }

  // ---------------------------------------------------------------- hooks and webhooks (JWT only)

  /** An inbound hook a platform delivers memories to; its secret is shown once. */
  createHook(options: { label?: string } = {}, mindId?: string): Promise<HookWithSecret> {
    const path = `/minds/${this.mind(mindId)}/hooks`;
    return this.send({ method: "POST", path, parse: json<HookWithSecret>, body: defined(options) });
  }

  private hooksCall(mindId: string | undefined, options: ListOptions): Call<Page<Hook>> {
    const params = { limit: options.limit, cursor: options.cursor };
    return { method: "GET", path: `/minds/${this.mind(mindId)}/hooks`, parse: page<Hook>("hooks"), params };
  }

  listHooks(options: ListOptions = {}, mindId?: string): Promise<Page<Hook>> {
    return this.send(this.hooksCall(mindId, options));
  }

  iterHooks(options: ListOptions = {}, mindId?: string): AsyncGenerator<Hook> {
    return this.pages((cursor) => this.hooksCall(mindId, { ...options, cursor }), options.cursor);
  }

  revokeHook(hookId: string, mindId?: string): Promise<null> {
    const path = `/minds/${this.mind(mindId)}/hooks/${escape(hookId)}`;
    return this.send({ method: "DELETE", path, parse: nothing });
  }

  /** A new secret for a hook; the old one stays valid for `graceSeconds`. */
  rotateHook(hookId: string, options: { graceSeconds?: number } = {}, mindId?: string): Promise<HookWithSecret> {
    const path = `/minds/${this.mind(mindId)}/hooks/${escape(hookId)}/rotate`;
    const body = defined({ grace_seconds: options.graceSeconds });
    return this.send({ method: "POST", path, parse: json<HookWithSecret>, body });
  }

  /** Subscribe an endpoint to memory events; its secret is shown once. */
  createWebhook(url: string, events: string[], mindId?: string): Promise<WebhookWithSecret> {
    const path = `/minds/${this.mind(mindId)}/webhooks`;
    return this.send({ method: "POST", path, parse: json<WebhookWithSecret>, body: { url, events } });
  }

  private webhooksCall(mindId: string | undefined, options: ListOptions): Call<Page<Webhook>> {
    const params = { limit: options.limit, cursor: options.cursor };
    const path = `/minds/${this.mind(mindId)}/webhooks`;
    return { method: "GET", path, parse: page<Webhook>("webhooks"), params };
  }

  listWebhooks(options: ListOptions = {}, mindId?: string): Promise<Page<Webhook>> {
    return this.send(this.webhooksCall(mindId, options));
  }

  iterWebhooks(options: ListOptions = {}, mindId?: string): AsyncGenerator<Webhook> {
    return this.pages((cursor) => this.webhooksCall(mindId, { ...options, cursor }), options.cursor);
  }

  updateWebhook(
    webhookId: string,
    patch: { url?: string; events?: string[]; enabled?: boolean },
    mindId?: string,
  ): Promise<Webhook> {
    const path = `/minds/${this.mind(mindId)}/webhooks/${escape(webhookId)}`;
    return this.send({ method: "PATCH", path, parse: json<Webhook>, body: defined(patch), idempotent: true });
  }

  deleteWebhook(webhookId: string, mindId?: string): Promise<null> {
    const path = `/minds/${this.mind(mindId)}/webhooks/${escape(webhookId)}`;
    return this.send({ method: "DELETE", path, parse: nothing });
  }

  /** Send a `ping` to the webhook now and report how it went. */
  testWebhook(webhookId: string, mindId?: string): Promise<TestOutcome> {
    const path = `/minds/${this.mind(mindId)}/webhooks/${escape(webhookId)}/test`;
    return this.send({ method: "POST", path, parse: json<TestOutcome> });
  }

  /** Recent delivery attempts of a webhook. */
  webhookDeliveries(webhookId: string, options: { limit?: number } = {}, mindId?: string): Promise<Delivery[]> {
    const path = `/minds/${this.mind(mindId)}/webhooks/${escape(webhookId)}/deliveries`;
    const parse = async (response: Response) => ((await response.json()) as { deliveries: Delivery[] }).deliveries;
    return this.send({ method: "GET", path, parse, params: { limit: options.limit } });
  }

  /** The API's OpenAPI 3.1 document (public). */
  openapi(): Promise<Record<string, unknown>> {
    return this.send({ method: "GET", path: "/openapi.json", parse: json<Record<string, unknown>> });
  }
}
