"""Opaque pagination cursors, signed and bound to one mind and one query.

A cursor is base64url(JSON) + "." + base64url(HMAC-SHA256), unpadded (`TOKEN`). Anything that
fails the signature, or was minted for another mind or another query, is a 400 — never a way in.
So is a signed position whose values could not be a key of ours (`_checked_position`: DynamoDB's
bounds on a key attribute, the right JSON types), even though only the pepper's holder can sign one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
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


# What a cursor looks like (the OpenAPI document's pattern for `cursor` says the same): two unpadded
# base64url parts. Checked before decoding, since b64decode would skip characters outside them.
TOKEN = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
TOKEN_PATTERN = "^" + TOKEN.pattern + "$"

MAX_POSITION_FIELDS = 8
# A position's values are DynamoDB key attributes, as strings: at most 2,048 bytes of UTF-8 for a
# partition key (`pk`), 1,024 for any other (a sort key, of the table or of an index), never empty;
# or, in NUMBERS, a whole number from 0 to MAX_NUMBER (the search's offset into its hits).
PARTITION_KEY_BYTES = 2048
SORT_KEY_BYTES = 1024
PARTITION_KEYS = frozenset({"pk"})
NUMBERS = frozenset({"o"})
MAX_NUMBER = 2**31 - 1


def invalid(reason: str) -> BadRequest:
    return BadRequest(
        "cursor: not a cursor this query issued; start again without it",
        details=[{"field": "cursor", "rule": "cursor", "message": reason}],
    )


def _fits(name: str, value: Any) -> bool:
    """Whether `value` could be the position field `name` of one of our cursors."""
    if name in NUMBERS:
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_NUMBER
    if not isinstance(value, str) or not value:
        return False
    try:
        size = len(value.encode("utf-8"))  # a lone surrogate (JSON's "\ud800") is no text
    except UnicodeEncodeError:
        return False
    return size <= (PARTITION_KEY_BYTES if name in PARTITION_KEYS else SORT_KEY_BYTES)


def _checked_position(position: Any, fields: Collection[str] | None, mind_id: str) -> dict[str, Any]:
    """A position of the shape its query needs: exactly `fields` when given, each value one a key
    of ours could hold (`_fits`), and a `pk` (a Memories-table key) only of the cursor's own mind."""
    if not isinstance(position, dict) or not 0 < len(position) <= MAX_POSITION_FIELDS:
        raise invalid("malformed position")
    if not all(isinstance(name, str) and _fits(name, value) for name, value in position.items()):
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
    if not TOKEN.fullmatch(token):
        raise invalid("invalid, foreign or for another query")
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
