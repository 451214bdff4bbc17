/** Synapse's TypeScript client: see README.md. */

export { Synapse, DEFAULT_TIMEOUT_MS } from "./client.js";
export type {
  SynapseOptions,
  Categories,
  ListOptions,
  MemoryFilter,
  AskerClock,
  RecallOptions,
  ByTagOptions,
  ExpiringOptions,
  SearchMode,
  SearchOptions,
  SearchPage,
  UpdateFields,
  ProposalFilter,
  MindSettingsPatch,
} from "./client.js";
export { Retry, Credentials, VERSION, RETRY_STATUSES, retryAfter } from "./core.js";
export type { Call, Page, Params, RetryOptions } from "./core.js";
export * from "./errors.js";
export { exportLines, exportMemories, importRecords, readLines, writeBody, CHUNK, WRITE_FIELDS } from "./transfer.js";
export type { ImportReport } from "./transfer.js";
export type * from "./types.js";
export type { components, paths, operations } from "./openapi.js";
