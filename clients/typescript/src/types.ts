/** The API's objects, named as the OpenAPI document names them (generated into openapi.ts). */

import type { components } from "./openapi.js";

type Schemas = components["schemas"];

export type Memory = Schemas["Memory"];
export type MemoryWrite = Schemas["MemoryWrite"];
export type BatchAnswer = Schemas["BatchAnswer"];
export type BatchResult = Schemas["BatchResult"];
export type RecallJson = Schemas["RecallJson"];
export type SearchResult = Schemas["SearchResult"];
export type Revision = Schemas["Revision"];
export type SimilarNow = Schemas["SimilarNow"];
export type Proposal = Schemas["Proposal"];
export type Mind = Schemas["Mind"];
export type NewMind = Schemas["NewMind"];
export type MindKey = Schemas["Key"];
export type NewKey = Schemas["NewKey"];
export type AuditEvent = Schemas["AuditEvent"];
export type Hook = Schemas["Hook"];
export type HookWithSecret = Schemas["HookWithSecret"];
export type Webhook = Schemas["Webhook"];
export type WebhookWithSecret = Schemas["WebhookWithSecret"];
export type Delivery = Schemas["Delivery"];
export type TestOutcome = Schemas["TestOutcome"];
export type Category = Schemas["Category"];
export type Priority = Schemas["Priority"];
/** What `acceptProposal` / `rejectProposal` answer. */
export type ProposalDecision = Schemas["Proposed"];

/**
 * A write of `remember`: content required, the rest optional (without a category it is a note, without
 * a key the server derives one from the content, so the same text again replaces it).
 */
export type MemoryInput = Pick<MemoryWrite, "content"> &
  Partial<
    Pick<
      MemoryWrite,
      "category" | "key" | "tags" | "priority" | "confidence" | "expires_at" | "occurred_at" | "supersedes"
    >
  >;
