/**
 * Export a mind to JSON Lines and import such a file into a mind (backups, migrations), as the
 * Python client's transfer module does: export writes every memory (expired ones too) with all its
 * fields, one object a line; import stores them with `POST /memory/batch`, 100 a request, keyed by
 * (category, key), so importing a file twice replaces rather than duplicates. A record whose expiry
 * has passed is skipped and counted (`skippedExpired`): a write may not set an expiry in the past, and
 * an expired memory is out of recall anyway; a backup is what keeps expired memories.
 */

import type { Synapse } from "./client.js";
import type { BatchAnswer, BatchResult, MemoryWrite } from "./types.js";

/** POST /memory/batch takes at most 100 memories. */
export const CHUNK = 100;
export const WRITE_FIELDS = [
  "category",
  "key",
  "content",
  "tags",
  "priority",
  "confidence",
  "expires_at",
  "occurred_at",
] as const;

type Lines = Iterable<string> | AsyncIterable<string>;
type Records = Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>;

/** Every memory of the client's mind as JSON Lines, one line (ending in "\n") at a time. */
export async function* exportLines(client: Synapse): AsyncGenerator<string> {
  for await (const memory of client.iterMemories({ includeExpired: true, limit: 100 })) {
    yield `${JSON.stringify(memory)}\n`;
  }
}

/** Write every memory to `write` as JSON Lines; returns how many. */
export async function exportMemories(
  client: Synapse,
  write: (line: string) => unknown,
  progress?: (count: number) => void,
): Promise<number> {
  let count = 0;
  for await (const line of exportLines(client)) {
    await write(line);
    count += 1;
    progress?.(count);
  }
  return count;
}

/** What `POST /memory` takes of an exported memory (null fields left out). */
export function writeBody(record: Record<string, unknown>): Partial<MemoryWrite> {
  const body: Record<string, unknown> = {};
  for (const name of WRITE_FIELDS) {
    if (record[name] !== null && record[name] !== undefined) body[name] = record[name];
  }
  return body as Partial<MemoryWrite>;
}

/** Lines of text (or whole chunks holding several) read as JSON objects; blank lines skipped. */
export async function* readLines(source: Lines | string): AsyncGenerator<Record<string, unknown>> {
  const chunks: Lines = typeof source === "string" ? [source] : source;
  let number = 0;
  let rest = "";
  const parse = (line: string): Record<string, unknown> | null => {
    number += 1;
    if (!line.trim()) return null;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (error) {
      throw new SyntaxError(`line ${number}: not JSON (${(error as Error).message})`);
    }
    if (record === null || typeof record !== "object" || Array.isArray(record)) {
      throw new SyntaxError(`line ${number}: not a JSON object`);
    }
    return record as Record<string, unknown>;
  };
  for await (const chunk of chunks) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    for (const line of parts) {
      const record = parse(line);
      if (record) yield record;
    }
  }
  const last = parse(rest);
  if (last) yield last;
}

export interface ImportReport {
  created: number;
  replaced: number;
  proposed: number;
  failed: number;
  /** Records expired by the time of the import (this machine's clock): not written. */
  skippedExpired: number;
  /** Every record dealt with, the skipped ones too. */
  total: number;
  /** Each failed record with its batch result (Synapse's message in `result.error`). */
  errors: { record: Record<string, unknown>; result: BatchResult }[];
}

/**
 * Whether the record's `expires_at` is at or before `now`. One that is not a timestamp with a zone is
 * not: it is sent, and its error names the field.
 */
function hasExpired(record: Record<string, unknown>, now: number = Date.now()): boolean {
  const value = record.expires_at;
  if (typeof value !== "string" || !/(Z|[+-]\d\d:?\d\d)$/i.test(value)) return false;
  const moment = Date.parse(value);
  return !Number.isNaN(moment) && moment <= now;
}

function randomId(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (crypto?.randomUUID) return crypto.randomUUID().replaceAll("-", "");
  return Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
}

/**
 * Store `records` (exported memories, or JSON Lines via `readLines`) in the client's mind, 100 per
 * batch request, one request at a time; each chunk has its own Idempotency-Key, so a retried chunk
 * applies once. A record already expired is skipped and counted in `skippedExpired`.
 */
export async function importRecords(
  client: Synapse,
  records: Records,
  progress?: (total: number) => void,
): Promise<ImportReport> {
  const report: ImportReport = {
    created: 0,
    replaced: 0,
    proposed: 0,
    failed: 0,
    skippedExpired: 0,
    total: 0,
    errors: [],
  };
  const run = randomId();
  let number = 0;
  const send = async (chunk: Record<string, unknown>[]): Promise<void> => {
    const idempotencyKey = `import-${run}-${number++}`;
    const answer: BatchAnswer = await client.rememberBatch(chunk.map(writeBody), { idempotencyKey });
    for (const result of answer.results) {
      if (result.status === "error") report.errors.push({ record: chunk[result.index] ?? {}, result });
    }
    report.created += answer.summary.created;
    report.replaced += answer.summary.replaced;
    report.proposed += answer.summary.proposed;
    report.failed += answer.summary.failed;
    report.total = report.created + report.replaced + report.proposed + report.failed + report.skippedExpired;
    progress?.(report.total);
  };
  let chunk: Record<string, unknown>[] = [];
  for await (const record of records) {
    if (hasExpired(record)) {
      report.skippedExpired += 1;
      report.total += 1;
      continue;
    }
    chunk.push(record);
    if (chunk.length === CHUNK) {
      await send(chunk);
      chunk = [];
    }
  }
  if (chunk.length) await send(chunk);
  return report;
}
