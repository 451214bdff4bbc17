"""Opaque pagination cursors, signed and bound to one mind and one query.

A cursor is base64url(JSON) + "." + base64url(HMAC-SHA256). Anything that fails the
signature, or was minted for another mind or another query, is a 400 — never a way in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from synapse.core.errors import BadRequest
from synapse.core.settings import get_settings


def _signing_key() -> bytes:
    return hmac.new(get_settings().key_pepper, b"synapse/cursor/v1", hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(mind_id: str, scope: str, position: dict[str, Any]) -> str:
    payload = json.dumps({"m": mind_id, "s": scope, "p": position}, separators=(",", ":"), sort_keys=True)
    body = payload.encode()
    return _b64(body) + "." + _b64(hmac.new(_signing_key(), body, hashlib.sha256).digest())


def decode(token: str, mind_id: str, scope: str) -> dict[str, Any]:
    invalid = BadRequest(
        "cursor: not a cursor this query issued; start again without it",
        details=[{"field": "cursor", "rule": "cursor", "message": "invalid, foreign or for another query"}],
    )
    try:
        body_text, signature_text = token.split(".", 1)
        body, signature = _unb64(body_text), _unb64(signature_text)
    except ValueError:
        raise invalid from None
    expected = hmac.new(_signing_key(), body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise invalid
    payload = json.loads(body)
    if payload.get("m") != mind_id or payload.get("s") != scope:
        raise invalid
    position: dict[str, Any] = payload["p"]
    return position
