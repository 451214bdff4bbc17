"""Ids the service issues (`m_…`, `mem_…`, `key_…`, `hook_…`, `wh_…`) and the cheap check that a
presented one could be ours."""

import re
import secrets

_ID_BODY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def new_id(prefix: str) -> str:
    """`prefix` + 22 URL-safe random characters (128 bits): unique, never reused."""
    return prefix + secrets.token_urlsafe(16)


def looks_like_id(prefix: str, value: str) -> bool:
    """Could `value` be an id we issued? Anything else is answered 404 before it reaches DynamoDB
    (whose key size limits would otherwise turn a hostile path into a 500)."""
    return value.startswith(prefix) and _ID_BODY.fullmatch(value[len(prefix) :]) is not None
