"""Schemathesis hooks for the contract run (tests/e2e/test_contract.py), loaded through
SCHEMATHESIS_HOOKS by the `schemathesis run` subprocess.

Each generated request gets the credential its operation takes (synapse.openapi.document.OPERATIONS):
a person's JWT for JWT-only routes, the JWT or the mind's Mind Key (chosen per request) where either
works; a hook delivery is signed with the hook's secret (most of the time: a few stay as generated,
so a bad signature is exercised too). Path ids point at things seeded in the mind (a memory, a
proposal, hooks, webhooks), so requests reach the handlers' logic instead of a 404; destructive
operations get their own spare ids, so deleting a mind, key, hook, webhook or memory never removes
what the rest of the run uses.

The ids and credentials come from the environment variable SYNAPSE_CONTRACT (JSON).
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import schemathesis
from synapse.openapi.document import OPERATIONS
from synapse.webhooks import signing

SEEDED: dict[str, str] = json.loads(os.environ.get("SYNAPSE_CONTRACT", "{}"))
_choice = random.Random(0)  # not security: which credential a request carries

# (method, path parameter) → the seeded id it is given; "*" for any method.
_PATH_IDS = {
    ("DELETE", "/minds/{mind_id}", "mind_id"): "spare_mind",
    ("*", "*", "mind_id"): "mind",
    ("DELETE", "/memory/{id}", "id"): "spare_memory",
    ("*", "/memory/{id}", "id"): "memory",
    ("*", "/memory/{id}/verify", "id"): "memory",
    ("*", "/memory/{id}/history", "id"): "memory",
    ("*", "/memory/{id}/restore", "id"): "memory",
    ("*", "/proposals/{id}", "id"): "proposal",
    ("*", "/proposals/{id}/accept", "id"): "proposal",
    ("*", "/proposals/{id}/reject", "id"): "proposal",
    ("*", "*", "key_id"): "spare_key",
    ("DELETE", "*", "hook_id"): "spare_hook",
    ("POST", "/minds/{mind_id}/hooks/{hook_id}/rotate", "hook_id"): "rotated_hook",
    ("*", "*", "hook_id"): "hook",
    ("DELETE", "*", "webhook_id"): "spare_webhook",
    ("*", "*", "webhook_id"): "webhook",
}


def _seeded_id(method: str, path: str, name: str) -> str | None:
    for candidate in ((method, path, name), ("*", path, name), (method, "*", name), ("*", "*", name)):
        if candidate in _PATH_IDS:
            return SEEDED[_PATH_IDS[candidate]]
    return None


def _address(case: Any, headers: dict[str, Any]) -> None:
    """A memory request names the seeded mind (or none, with the Mind Key), never a random one."""
    for name in list(headers):
        if name.lower() == "x-mind-id":
            headers[name] = SEEDED["mind"]
    if case.query and "mind_id" in case.query:
        case.query["mind_id"] = SEEDED["mind"]


def _sign(case: Any, headers: dict[str, Any]) -> None:
    if _choice.random() < 0.1 or not isinstance(case.body, (dict, list)):
        return  # left as generated: the 401 path
    raw = json.dumps(case.body).encode()  # exactly what requests sends for `json=`
    headers["Synapse-Signature"] = signing.header_value([SEEDED["hook_secret"]], raw)


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    method, path = case.operation.method.upper(), case.operation.path
    auth = OPERATIONS[(method, path)].auth
    for name in list(case.path_parameters or {}):
        seeded = _seeded_id(method, path, name)
        if seeded is not None:
            case.path_parameters[name] = seeded
        elif name == "proxy+" and _choice.random() < 0.5:
            case.path_parameters[name] = "app.js"  # one of the console's files (else a 404)
    headers = dict(case.headers or {})
    headers.pop("Authorization", None)
    headers.pop("X-Mind-Key", None)
    if auth == "user" or (auth == "either" and _choice.random() < 0.5):
        headers["Authorization"] = f"Bearer {SEEDED['jwt']}"
        headers.setdefault("X-Mind-Id", SEEDED["mind"])
    elif auth == "either":
        headers["Authorization"] = f"Bearer {SEEDED['mind_key']}"
    elif auth == "signed":
        _sign(case, headers)
    _address(case, headers)
    case.headers = headers
