"""Secrets the server must use again (webhook signing secrets) are kept sealed, never in plain text.

AES-256-GCM under a key derived from the server-side pepper; the associated data binds a sealed
value to the item it belongs to, so a sealed secret copied onto another item does not open.
`cryptography` is imported on the first seal or unseal, not with the module: listing or deleting
webhooks and hooks imports this module and never opens a secret (issue 14, cold start).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Any

from synapse.core.settings import get_settings

_VERSION = "s1"


def _box() -> Any:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # costly: loaded when needed

    return AESGCM(hmac.new(get_settings().key_pepper, b"synapse/sealed/v1", hashlib.sha256).digest())


def seal(plaintext: str, bound_to: str) -> str:
    nonce = os.urandom(12)
    box = _box().encrypt(nonce, plaintext.encode(), bound_to.encode())
    return f"{_VERSION}.{base64.urlsafe_b64encode(nonce + box).decode()}"


def unseal(token: str, bound_to: str) -> str:
    version, _, body = token.partition(".")
    if version != _VERSION:
        raise ValueError("unknown sealed-secret version")
    raw = base64.urlsafe_b64decode(body)
    opened: bytes = _box().decrypt(raw[:12], raw[12:], bound_to.encode())
    return opened.decode()
