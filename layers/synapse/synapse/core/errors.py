"""Domain errors. Each knows its HTTP status and error code; `http.py` is the one place that renders them."""

from __future__ import annotations

from typing import Any


class SynapseError(Exception):
    status = 500
    code = "internal_error"

    def __init__(
        self,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        self.headers = headers or {}


class BadRequest(SynapseError):
    status, code = 400, "bad_request"


class Unauthorized(SynapseError):
    status, code = 401, "unauthorized"

    def __init__(self, message: str = "A valid JWT or Mind Key is required.") -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="synapse"'})


class Forbidden(SynapseError):
    status, code = 403, "forbidden"


class NotFound(SynapseError):
    status, code = 404, "not_found"


class Conflict(SynapseError):
    status, code = 409, "conflict"


class Contention(Conflict):
    """Other writers kept the same items busy (DynamoDB `TransactionConflict`, throttling) through
    every retry; nothing was written. Sending the request again shortly is safe."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class LimitReached(Conflict):
    """A mind or a user holds as many of something as it may; delete one first."""

    code = "limit_reached"


class InProgress(SynapseError):
    """The same request is being answered elsewhere right now; ask again shortly."""

    status, code = 409, "in_progress"

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"Retry-After": "2"})


class PreconditionFailed(SynapseError):
    status, code = 412, "precondition_failed"


class PayloadTooLarge(SynapseError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaType(SynapseError):
    status, code = 415, "unsupported_media_type"


class Unprocessable(SynapseError):
    status, code = 422, "validation_error"


class Throttled(SynapseError):
    status, code = 429, "throttled"

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after))})


def field_error(field: str, rule: str, message: str) -> Unprocessable:
    """A 422 for one field: the details name the field and the rule it broke."""
    return Unprocessable(f"{field}: {message}", details=[{"field": field, "rule": rule, "message": message}])
