"""The parameters of an OAuth request: a query string or an `application/x-www-form-urlencoded`
body (RFC 6749 §3.2; JSON is taken too, as some clients send it). A parameter sent twice is an
error (RFC 6749 §3.1), and every value is bounded so nothing a client sends reaches a key or a
log unbounded."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import parse_qs, unquote

from synapse.core import json_input
from synapse.oauth.errors import OAuthError

MAX_VALUE_CHARS = 4096
BASIC_CHALLENGE = 'Basic realm="synapse-oauth"'


def _single(pairs: dict[str, list[str]]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for name, found in pairs.items():
        if len(found) > 1:
            raise OAuthError("invalid_request", f"{name[:40]} is sent more than once.")
        if len(found[0]) > MAX_VALUE_CHARS:
            raise OAuthError("invalid_request", f"{name[:40]} is longer than {MAX_VALUE_CHARS} characters.")
        fields[name] = found[0]
    return fields


def query(raw: str) -> dict[str, str]:
    return _single(parse_qs(raw, keep_blank_values=False))


def body(raw: bytes, content_type: str) -> dict[str, str]:
    kind = content_type.split(";")[0].strip().lower()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthError("invalid_request", "The body is not UTF-8 text.") from None
    if kind == "application/json":
        try:  # as every door reads JSON: no NaN, no infinite number, no lone surrogate
            parsed = json_input.read(text) if text.strip() else {}
        except json_input.Unreadable as error:
            where = f" ({error.field})" if error.field else ""
            raise OAuthError("invalid_request", f"The JSON body{where} {error.message}.") from None
        if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
            raise OAuthError("invalid_request", "The JSON body must be an object of string parameters.")
        return _single({name: [value] for name, value in parsed.items() if value})
    if kind not in {"application/x-www-form-urlencoded", ""}:
        raise OAuthError("invalid_request", "Send the parameters as application/x-www-form-urlencoded.")
    return query(text)


def required(fields: dict[str, str], name: str) -> str:
    value = fields.get(name, "").strip()
    if not value:
        raise OAuthError("invalid_request", f"{name} is required.")
    return value


def basic_client_id(authorization: str) -> str | None:
    """The client id of `Authorization: Basic base64(id:secret)` (each part form-encoded), or None.
    Credentials that are not that (not ASCII base64, not UTF-8 once decoded, an id too long) are
    `invalid_client`, 401 with a Basic challenge, as RFC 6749 §5.2 asks of a client that
    authenticated in the header."""
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return None
    try:  # b64decode raises ValueError, not binascii.Error, for text that is not ASCII
        decoded = base64.b64decode(encoded.strip().encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        decoded = None
    client_id = unquote(decoded.partition(":")[0]) if decoded is not None else None
    if client_id is None or len(client_id) > MAX_VALUE_CHARS or not json_input.is_text(client_id):
        raise OAuthError(
            "invalid_client",
            "The Basic Authorization header is not base64 of id:secret.",
            challenge=BASIC_CHALLENGE,
        )
    return client_id or None
