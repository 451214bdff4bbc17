"""Webhook signatures, one scheme both ways (inbound deliveries and outbound events).

    Synapse-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=...]

Several `v1` values let a sender sign with the old and the new secret during a rotation. The
timestamp is inside the signed text, so a captured request cannot be replayed outside the tolerance.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable

from synapse.core.errors import Unauthorized

HEADER = "Synapse-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 - a label, not a secret


def new_secret() -> str:
    """A signing secret for a hook or a webhook, recognisable by its prefix."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def header_value(secrets: Iterable[str], body: bytes, timestamp: int | None = None) -> str:
    moment = int(time.time()) if timestamp is None else timestamp
    return ",".join([f"t={moment}", *(f"v1={signature(s, moment, body)}" for s in secrets)])


def verify(value: str | None, body: bytes, secrets: Iterable[str], now: int | None = None) -> int:
    """The signed timestamp if any `v1` matches any live secret within the tolerance, else 401."""
    if not value:
        raise Unauthorized(f"Missing {HEADER} header.")
    timestamp: int | None = None
    candidates: list[str] = []
    for part in value.split(","):
        name, _, text = part.strip().partition("=")
        if name == "t" and text.isascii() and text.isdigit() and len(text) <= 12:
            timestamp = int(text)
        elif name == "v1" and text:
            candidates.append(text)
    if timestamp is None or not candidates:
        raise Unauthorized(f"{HEADER} must look like t=<unix seconds>,v1=<hex>.")
    current = int(time.time()) if now is None else now
    if abs(current - timestamp) > TOLERANCE_SECONDS:
        raise Unauthorized(f"{HEADER} timestamp is more than {TOLERANCE_SECONDS} s away from now.")
    expected = [signature(s, timestamp, body) for s in secrets]
    matched = False
    for candidate in candidates:
        for good in expected:
            matched |= hmac.compare_digest(candidate.encode(), good.encode())
    if not matched:
        raise Unauthorized(f"{HEADER} does not match the body.")
    return timestamp
