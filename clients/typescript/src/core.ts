/**
 * What every call shares: the description of one API call (`Call`), how it becomes a request for a
 * credential, how an answer becomes a value or an error, and when to retry (the Python client's rules).
 */

import { errorClass, SynapseError, TransportError } from "./errors.js";

export const VERSION = "0.1.0";
/** In a Call's path: the client's mind id, filled in when the call is sent. */
export const MIND = "{mind}";
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "PUT", "DELETE"]);

export type QueryValue = string | number | boolean | string[] | null | undefined;
export type Params = Record<string, QueryValue>;

/** One API operation: method, path, query, body and how to read the answer. */
export interface Call<T> {
  method: string;
  path: string;
  parse: (response: Response) => Promise<T>;
  params?: Params;
  body?: unknown;
  headers?: Record<string, string>;
  /** May a 502/503/504 (or no answer) be retried? Default: by method (GET, PUT, DELETE). */
  idempotent?: boolean;
}

export function retryOnServerError(call: Call<unknown>): boolean {
  return call.idempotent ?? IDEMPOTENT_METHODS.has(call.method);
}

export interface RetryOptions {
  /** More tries at most (default 4). */
  attempts?: number;
  /** First backoff in seconds, doubling (default 0.5). */
  backoff?: number;
  /** Longest backoff in seconds (default 8). */
  maxBackoff?: number;
  /** A wait longer than this many seconds is not made: the error is thrown (default 60). */
  maxWait?: number;
}

/**
 * When to try a call again: `attempts` more tries at most, after the server's `Retry-After` when it
 * sends one, else an exponential backoff with full jitter. Retried: 429, and a 409 carrying
 * Retry-After, for any call; 502/503/504 and no answer at all only for calls safe to repeat.
 */
export class Retry {
  readonly attempts: number;
  readonly backoff: number;
  readonly maxBackoff: number;
  readonly maxWait: number;

  constructor(options: RetryOptions = {}) {
    this.attempts = options.attempts ?? 4;
    this.backoff = options.backoff ?? 0.5;
    this.maxBackoff = options.maxBackoff ?? 8;
    this.maxWait = options.maxWait ?? 60;
  }

  /** Seconds to wait before trying `call` again after `response`, or null to stop here. */
  delay(call: Call<unknown>, attempt: number, response: Response): number | null {
    const status = response.status;
    const told = retryAfter(response);
    if (attempt >= this.attempts) return null;
    if (!(status === 429 || (status === 409 && told !== null))) {
      if (!RETRY_STATUSES.has(status) || !retryOnServerError(call)) return null;
    }
    const wait = told !== null ? told + Math.random() * Math.min(1, this.backoff) : this.jittered(attempt);
    return wait <= this.maxWait ? wait : null;
  }

  /**
   * Seconds to wait after no answer came (it broke off, timed out), or null to give up. A refused
   * connection or an unknown host is not retried: nothing listens there.
   */
  afterFailure(call: Call<unknown>, attempt: number, error?: unknown): number | null {
    if (nothingListens(error)) return null;
    if (attempt >= this.attempts || !retryOnServerError(call)) return null;
    return this.jittered(attempt);
  }

  private jittered(attempt: number): number {
    return Math.random() * Math.min(this.maxBackoff, this.backoff * 2 ** attempt);
  }
}

const NOTHING_LISTENS = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"]);

/** A fetch that failed because no server is there (Node puts the socket's code in `cause`). */
export function nothingListens(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && depth < 4; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && NOTHING_LISTENS.has(code)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), or null. */
export function retryAfter(response: Response): number | null {
  const raw = response.headers.get("retry-after");
  if (raw === null || raw.trim() === "") return null;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const moment = Date.parse(raw);
  return Number.isNaN(moment) ? null : Math.max(0, (moment - Date.now()) / 1000);
}

/** Who calls: an agent's Mind Key, or a person's JWT (plus the mind they address). */
export class Credentials {
  constructor(
    readonly mindKey?: string,
    readonly token?: string,
    readonly mindId?: string,
  ) {
    if (Boolean(mindKey) === Boolean(token)) {
      throw new TypeError("give exactly one of mindKey (an agent) or token (a person's JWT)");
    }
  }

  headers(): Record<string, string> {
    const sent: Record<string, string> = { Authorization: `Bearer ${this.mindKey ?? this.token}` };
    // Browsers refuse to set User-Agent; elsewhere it tells the operator which client called.
    if (typeof (globalThis as { document?: unknown }).document === "undefined") {
      sent["User-Agent"] = `synapse-client-ts/${VERSION}`;
    }
    if (this.token && this.mindId) sent["X-Mind-Id"] = this.mindId;
    return sent;
  }

  path(path: string): string {
    if (!path.includes(MIND)) return path;
    if (!this.mindId) {
      throw new SynapseError("This call needs a mind id: pass mindId.", { code: "mind_id_required" });
    }
    return path.replace(MIND, encodeURIComponent(this.mindId));
  }
}

/** The query string without the undefined/nulls; a list repeats its name; booleans as true/false. */
export function queryString(params: Params = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === null || value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** A path segment (an id a caller passed) made safe for the URL. */
export const escape = encodeURIComponent;

export async function errorFrom(response: Response): Promise<SynapseError> {
  const status = response.status;
  let code = "";
  let message = "";
  let details: Record<string, unknown>[] = [];
  let requestId: string | null = null;
  let body: unknown = null;
  try {
    body = JSON.parse(await response.text());
  } catch {
    body = null;
  }
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    const record = body as Record<string, unknown>;
    const envelope = record.error;
    if (envelope !== null && typeof envelope === "object" && !Array.isArray(envelope)) {
      const info = envelope as Record<string, unknown>;
      code = String(info.code ?? "");
      message = String(info.message ?? "");
      const listed = Array.isArray(info.details) ? info.details : [];
      details = listed.filter((d): d is Record<string, unknown> => d !== null && typeof d === "object");
    }
    if (record.request_id) requestId = String(record.request_id);
  }
  if (!message) message = `HTTP ${status} ${response.statusText}`.trim();
  const Kind = errorClass(status);
  return new Kind(message, { status, code, details, requestId, retryAfter: retryAfter(response) });
}

export function unreachable(url: string, error: unknown): TransportError {
  const why = error instanceof Error ? error.message : String(error);
  return new TransportError(`Could not reach Synapse at ${url}: ${why}`, { cause: error });
}

// ---------------------------------------------------------------- answer readers

export const json = <T>(response: Response): Promise<T> => response.json() as Promise<T>;
export const nothing = async (response: Response): Promise<null> => {
  await response.body?.cancel();
  return null;
};
export const text = (response: Response): Promise<string> => response.text();

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function page<T>(name: string): (response: Response) => Promise<Page<T>> {
  return async (response) => {
    const body = (await response.json()) as Record<string, unknown>;
    return { items: body[name] as T[], nextCursor: (body.next_cursor as string | null) ?? null };
  };
}
