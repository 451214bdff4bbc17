"""OAuth's own error answers: `{"error", "error_description"}` (RFC 6749 §5.2, RFC 7591 §3.2.2,
RFC 6750 §3), which OAuth clients parse, rather than SPEC's error body."""

from __future__ import annotations

from typing import Any

STATUS = {"invalid_client": 401, "invalid_token": 401}


class OAuthError(Exception):
    """An error with an OAuth error code; `status` 400 unless the code says otherwise."""

    def __init__(
        self, error: str, description: str, status: int | None = None, challenge: str | None = None
    ) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status or STATUS.get(error, 400)
        self.challenge = challenge  # the WWW-Authenticate of a 401 for credentials in a header (§5.2)

    def body(self) -> dict[str, Any]:
        return {"error": self.error, "error_description": self.description}
