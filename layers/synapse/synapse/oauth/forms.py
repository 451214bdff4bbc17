"""The parameters of an OAuth request: a query string or an `application/x-www-form-urlencoded`
body (RFC 6749 §3.2; JSON is taken too, as some clients send it). A parameter sent twice is an
error (RFC 6749 §3.1), and every value is bounded so nothing a client sends reaches a key or a
log unbounded."""

from __future__ import annotations

import base64
import binascii
import json
from urllib.parse import parse_qs, unquote

from synapse.oauth.errors import OAuthError

MAX_VALUE_CHARS = 4096


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
        try:
            parsed = json.loads(text) if text.strip() else {}
        except ValueError:
            raise OAuthError("invalid_request", "The body is not valid JSON.") from None
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
    """The client id of `Authorization: Basic base64(id:secret)` (each part form-encoded), or None."""
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError(
            "invalid_client", "The Basic Authorization header is not base64 of id:secret."
        ) from None
    return unquote(decoded.partition(":")[0]) or None
