"""Opaque pagination cursors, signed and bound to one mind and one query.

A cursor is base64url(JSON) + "." + base64url(HMAC-SHA256). Anything that fails the
signature, or was minted for another mind or another query, is a 400 — never a way in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Collection
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


MAX_POSITION_FIELDS = 8
MAX_VALUE_CHARS = 2048  # DynamoDB's own limit on a partition key


def invalid(reason: str) -> BadRequest:
    return BadRequest(
        "cursor: not a cursor this query issued; start again without it",
        details=[{"field": "cursor", "rule": "cursor", "message": reason}],
    )


def _checked_position(position: Any, fields: Collection[str] | None, mind_id: str) -> dict[str, Any]:
    """A position of the shape its query needs: string keys to strings or whole numbers, exactly
    `fields` when given, and a `pk` (a Memories-table key) only of the cursor's own mind."""
    if not isinstance(position, dict) or not 0 < len(position) <= MAX_POSITION_FIELDS:
        raise invalid("malformed position")
    for value in position.values():
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise invalid("malformed position")
        if isinstance(value, str) and not 0 < len(value) <= MAX_VALUE_CHARS:
            raise invalid("malformed position")
    if fields is not None and set(position) != set(fields):
        raise invalid("malformed position")
    if position.get("pk", mind_id) != mind_id:
        raise invalid("malformed position")
    return position


def decode(token: str, mind_id: str, scope: str, fields: Collection[str] | None = None) -> dict[str, Any]:
    """The position a cursor holds, if it is ours (signed), for this mind and query, and well formed.

    `fields` names the keys the query's position must have (its ExclusiveStartKey, say); a position
    with a `pk` must then name this mind. Anything else is a 400, never a 500.
    """
    try:
        body_text, signature_text = token.split(".", 1)
        body, signature = _unb64(body_text), _unb64(signature_text)
    except ValueError:
        raise invalid("invalid, foreign or for another query") from None
    expected = hmac.new(_signing_key(), body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise invalid("invalid, foreign or for another query")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        raise invalid("malformed payload") from None
    if not isinstance(payload, dict) or payload.get("m") != mind_id or payload.get("s") != scope:
        raise invalid("invalid, foreign or for another query")
    return _checked_position(payload.get("p"), fields, mind_id)
