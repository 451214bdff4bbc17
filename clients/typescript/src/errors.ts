/**
 * Every error Synapse answers becomes a `SynapseError` subclass chosen by its status, carrying what
 * the API's error envelope says (`code`, `message`, `details`) plus the HTTP `status` and the
 * `requestId` to quote when reporting a problem.
 */

export type ErrorDetail = Record<string, unknown>;

export interface SynapseErrorInit {
  status?: number;
  code?: string;
  details?: ErrorDetail[];
  requestId?: string | null;
  retryAfter?: number | null;
  cause?: unknown;
}

/** An error answer from Synapse (or no answer at all: `status` 0 for a transport failure). */
export class SynapseError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetail[];
  readonly requestId: string | null;
  /** Seconds the server asked to wait (its `Retry-After`), when it said. */
  readonly retryAfter: number | null;

  constructor(message: string, init: SynapseErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status ?? 0;
    this.code = init.code ?? "";
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }

  override toString(): string {
    const shown = this.status ? `${this.message} (${this.status} ${this.code})` : this.message;
    return this.requestId ? `${shown} [request id ${this.requestId}]` : shown;
  }
}

/** No HTTP answer: the connection failed or timed out. */
export class TransportError extends SynapseError {}
/** 400: a malformed request, query parameter or cursor. */
export class BadRequest extends SynapseError {}
/** 401: missing, malformed, expired or revoked credential. */
export class Unauthorized extends SynapseError {}
/** 403: a valid credential that may not do this (e.g. a Mind Key managing minds). */
export class Forbidden extends SynapseError {}
/** 404: no such thing in this mind. */
export class NotFound extends SynapseError {}
/** 409: a conflict, a reached limit (`code` "limit_reached") or a busy write. */
export class Conflict extends SynapseError {}
/** 412: `If-Match` named a stale version. */
export class PreconditionFailed extends SynapseError {}
/** 422: a field broke a rule; `details` name the field and the rule. */
export class ValidationFailed extends SynapseError {}
/** 429: this minute's requests are used up; `retryAfter` says for how long (seconds). */
export class RateLimited extends SynapseError {}
/** 5xx: a problem on Synapse's side. */
export class ServerError extends SynapseError {}

const BY_STATUS: Record<number, typeof SynapseError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  412: PreconditionFailed,
  422: ValidationFailed,
  429: RateLimited,
};

export function errorClass(status: number): typeof SynapseError {
  return BY_STATUS[status] ?? (status >= 500 ? ServerError : SynapseError);
}
