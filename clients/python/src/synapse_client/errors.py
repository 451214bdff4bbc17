"""Exceptions: every error Synapse answers becomes a `SynapseError` subclass chosen by its status.

Each carries what the API's error envelope says (`code`, `message`, `details`) plus the HTTP
`status` and the `request_id` to quote when reporting a problem.
"""

from __future__ import annotations

from typing import Any


class SynapseError(Exception):
    """An error answer from Synapse (or no answer at all: `status` 0 for a transport failure)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        code: str = "",
        details: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details or []
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        shown = f"{self.message} ({self.status} {self.code})" if self.status else self.message
        return f"{shown} [request id {self.request_id}]" if self.request_id else shown


class TransportError(SynapseError):
    """No HTTP answer: the connection failed or timed out."""


class BadRequest(SynapseError):
    """400: a malformed request, query parameter or cursor."""


class Unauthorized(SynapseError):
    """401: missing, malformed, expired or revoked credential."""


class Forbidden(SynapseError):
    """403: a valid credential that may not do this (e.g. a Mind Key managing minds)."""


class NotFound(SynapseError):
    """404: no such thing in this mind."""


class Conflict(SynapseError):
    """409: a conflict, a reached limit (`code` "limit_reached") or a busy write."""


class PreconditionFailed(SynapseError):
    """412: `If-Match` named a stale version."""


class ValidationFailed(SynapseError):
    """422: a field broke a rule; `details` name the field and the rule."""


class RateLimited(SynapseError):
    """429: this minute's requests are used up; `retry_after` says for how long (seconds)."""


class ServerError(SynapseError):
    """5xx: a problem on Synapse's side."""


_BY_STATUS: dict[int, type[SynapseError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    422: ValidationFailed,
    429: RateLimited,
}


def error_class(status: int) -> type[SynapseError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else SynapseError
