"""Schemathesis hooks for the contract run (tests/e2e/test_contract.py), loaded through
SCHEMATHESIS_HOOKS by the `schemathesis run` subprocess.

Each generated request gets the credential its operation takes (synapse.openapi.document.OPERATIONS):
a person's JWT for JWT-only routes, the JWT or the mind's Mind Key (chosen per request) where either
works; a hook delivery is signed with the hook's secret (most of the time: a few stay as generated,
so a bad signature is exercised too). Path ids point at things seeded in the mind (a memory, a
proposal, hooks, webhooks, OAuth authorization requests, a grant, members), so requests reach the handlers'
logic instead of a 404; destructive operations get their own spare ids, so deleting a mind, key,
hook, webhook, grant or memory never removes what the rest of the run uses.

A request schemathesis means to be valid (positive data, which the service must accept) gets what no
schema can state, because it depends on the service's state, as its ids do: a `cursor` the service
issued for that very query (the next page of the same request with limit=1), or none when there is
no next page; an OAuth client that is registered (and its redirect URI), a decision for a mind of
the person's, and once per grant type a code (with its PKCE verifier) or refresh token the service
issued; a webhook URL whose host resolves, and to an address this run may call (the generated URL
with its host and port made `localhost:9`); in an update of the seeded memory, its own category
and key (they cannot change); in a write of a memory, an `expires_at` in the service's future (a
write's may not lie in the past, which depends on its clock as an id does on its state); in a
restore, a backup the service wrote (its lines are chained, which no schema states; the seeded mind
is not empty, so it is refused by state, a 409); and always a valid signature. A transfer of
ownership always keeps the run's person an owner (`keep_role`), so the operations after it are
still an owner's. Where either credential works, a body that names its `source` is sent with that
source's credential (a JWT writes as `user`).

The ids and credentials come from the environment variable SYNAPSE_CONTRACT (JSON).
"""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import schemathesis
from synapse.openapi.document import OPERATIONS
from synapse.webhooks import signing

SEEDED: dict[str, str] = json.loads(os.environ.get("SYNAPSE_CONTRACT", "{}"))
NDJSON = "application/x-ndjson"
# A restore's body is a backup's lines, sent as they are: text on the wire.
schemathesis.serializer.alias(NDJSON, "text/plain")
_choice = random.Random(0)  # not security: which credential a request carries

# (method, path parameter) → the seeded id it is given; "*" for any method.
_PATH_IDS = {
    ("DELETE", "/minds/{mind_id}", "mind_id"): "spare_mind",
    ("*", "*", "mind_id"): "mind",
    ("DELETE", "/memory/{id}", "id"): "spare_memory",
    ("*", "/memory/{id}", "id"): "memory",
    ("*", "/memory/{id}/verify", "id"): "memory",
    ("*", "/memory/{id}/history", "id"): "memory",
    ("*", "/memory/{id}/similar", "id"): "memory",
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
    ("GET", "*", "request_id"): "oauth_request",
    ("POST", "*", "request_id"): "spare_oauth_request",  # a decision answers it: the rest are 404
    ("*", "*", "grant_id"): "spare_grant",
    ("DELETE", "*", "user_id"): "spare_member",
    ("*", "*", "user_id"): "member",
}
# The seeded code and refresh token, each for the first valid request of its grant type (they work once).
_UNUSED = {"authorization_code": "oauth_code", "refresh_token": "oauth_refresh_token"}


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


def _as_user(case: Any) -> bool:
    """For a route that takes either credential: the JWT or the Mind Key, chosen at random, unless
    the body names its `source`, which must be the credential's (a person writes as `user`)."""
    source = case.body.get("source") if isinstance(case.body, dict) else None
    return source == "user" if source in ("user", "agent") else _choice.random() < 0.5


def _same_category_and_key(case: Any) -> None:
    """An update may name the memory's category and key, but only as they are (else a 422)."""
    if isinstance(case.body, dict):
        for name in ("category", "key"):
            if case.body.get(name) is not None:
                case.body[name] = SEEDED[f"memory_{name}"]


def _future_expiry(case: Any) -> None:
    """A generated `expires_at` before now becomes a day from now: a write's expiry may not lie in
    the past (docs/rules.md §1, rule `future`), which no schema can state."""
    if not isinstance(case.body, dict) or not isinstance(case.body.get("expires_at"), str):
        return
    try:
        moment = datetime.fromisoformat(case.body["expires_at"])
    except ValueError:
        return
    now = datetime.now(UTC)
    if moment.tzinfo is not None and moment < now:
        case.body["expires_at"] = (now + timedelta(days=1)).isoformat()


def _no_supersedes(case: Any) -> None:
    """`supersedes` names memories of this mind (a generated id is an unknown one: 422), and a write
    that marks the seeded memory would take it out of the reads the rest of the run makes."""
    if isinstance(case.body, dict):
        case.body.pop("supersedes", None)


def _time_query(case: Any) -> None:
    """`after` no later than `before`, and `tz` an IANA zone: rules across parameters, or on a
    database of zones, that no schema states."""
    query = case.query
    if not isinstance(query, dict):
        return
    if "tz" in query:
        query["tz"] = "Europe/Berlin"
    if "now" in query:  # years 1900-2999 only (docs/time.md)
        query["now"] = "2026-12-03T10:00:00Z"
    after, before = query.get("after"), query.get("before")
    if isinstance(after, str) and isinstance(before, str):
        query.pop("before")


def _sign(case: Any, headers: dict[str, Any], always: bool) -> None:
    if not isinstance(case.body, (dict, list)) or (not always and _choice.random() < 0.1):
        return  # left as generated: the 401 path
    raw = json.dumps(case.body).encode()  # exactly what requests sends for `json=`
    headers["Synapse-Signature"] = signing.header_value([SEEDED["hook_secret"]], raw)


def _positive(case: Any) -> bool:
    """Whether the request, as it stands now, is one the schema says is valid (schemathesis
    revalidates what this hook changed)."""
    return case.meta is not None and case.meta.generation.mode.is_positive


def _issued_cursor(case: Any, headers: dict[str, Any]) -> None:
    """The generated cursor becomes one the service issued for the same request, or goes."""
    query = {name: value for name, value in case.query.items() if name != "cursor"}
    answer = requests.get(
        SEEDED["url"] + case.formatted_path, params={**query, "limit": 1}, headers=headers, timeout=30
    )
    if answer.status_code != 200:
        issued = None
    elif answer.headers.get("Content-Type", "").startswith(NDJSON):  # a backup's page: in a header
        issued = answer.headers.get("X-Next-Cursor")
    else:
        issued = answer.json().get("next_cursor")
    if issued:
        case.query["cursor"] = issued
    else:
        del case.query["cursor"]


def _callable_url(case: Any) -> None:
    """A generated webhook URL, pointed at a host that resolves to an address the run may call."""
    if isinstance(case.body, dict) and isinstance(case.body.get("url"), str):
        parts = urlsplit(case.body["url"])
        case.body["url"] = urlunsplit(parts._replace(netloc="localhost:9"))


def _oauth_client(case: Any, method: str, path: str) -> None:
    """An OAuth request names the seeded client (and its redirect URI; a revocation names it as the
    client asking), a decision the seeded mind, and the first token request of each grant type the
    seeded code (with its verifier) or refresh token, as an id in a path is the seeded one."""
    if (method, path) == ("GET", "/oauth/authorize") and case.query is not None:
        case.query["client_id"] = SEEDED["oauth_client"]
        case.query["redirect_uri"] = SEEDED["oauth_redirect_uri"]
    elif (method, path) == ("POST", "/oauth/token") and isinstance(case.body, dict):
        case.body["client_id"] = SEEDED["oauth_client"]
        unused = _UNUSED.pop(str(case.body.get("grant_type")), None)
        if unused == "oauth_code":
            case.body |= {"code": SEEDED[unused], "code_verifier": SEEDED["oauth_verifier"]}
            if "redirect_uri" in case.body:
                case.body["redirect_uri"] = SEEDED["oauth_redirect_uri"]
        elif unused is not None:
            case.body["refresh_token"] = SEEDED[unused]
        if unused is not None and "resource" in case.body:
            case.body["resource"] = SEEDED["url"] + "/mcp"
    elif (method, path) == ("POST", "/oauth/revoke") and isinstance(case.body, dict):
        case.body["client_id"] = SEEDED["oauth_client"]  # its own client: another's token is refused
    elif path == "/oauth/requests/{request_id}" and isinstance(case.body, dict) and "mind_id" in case.body:
        case.body["mind_id"] = SEEDED["mind"]


# Issue 32 item 1: a lone UTF-16 surrogate, which a JSON client sends as its escape "\\ud800".
LONE_SURROGATE = "\ud800"
_not_text = random.Random(32)  # its own: the other choices of the run stay as they were


def _not_text_in_mcp(case: Any) -> None:
    """Half the generated /mcp requests and notifications become a `remember` whose tag is a lone
    surrogate: invalid params naming it (a notification: 202), never a 5xx, and nothing stored
    (`test_contract` then reads the mind)."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("method"), str) or _not_text.random() < 0.5:
        return
    body["method"] = "tools/call"
    body["params"] = {"name": "remember", "arguments": {"content": "x", "tags": [LONE_SURROGATE]}}


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
    if auth == "user" or (auth == "either" and _as_user(case)):
        headers["Authorization"] = f"Bearer {SEEDED['jwt']}"
        headers.setdefault("X-Mind-Id", SEEDED["mind"])
    elif auth == "either":
        headers["Authorization"] = f"Bearer {SEEDED['mind_key']}"
    _address(case, headers)
    case.headers = headers
    positive = _positive(case)
    if positive and case.query and "cursor" in case.query:
        _issued_cursor(case, headers)
    if positive and path.startswith("/minds/{mind_id}/webhooks") and method in ("POST", "PATCH"):
        _callable_url(case)
    if positive and (method, path) == ("PUT", "/memory/{id}"):
        _same_category_and_key(case)
    if positive and (method, path) in (("POST", "/memory"), ("PUT", "/memory/{id}")):
        _future_expiry(case)
        _no_supersedes(case)
    if positive and (method, path) == ("POST", "/memory/batch") and isinstance(case.body, dict):
        for item in case.body.get("memories") or []:
            if isinstance(item, dict):
                item.pop("supersedes", None)
    if positive:
        _time_query(case)
    if positive and (method, path) == ("POST", "/minds/{mind_id}/restore"):
        case.body = SEEDED["backup"]  # lines the service wrote, chained as no schema can say
    if (method, path) == ("POST", "/minds/{mind_id}/transfer") and isinstance(case.body, dict):
        case.body["keep_role"] = "owner"  # the run's person stays an owner, or the rest is a reviewer's
    if positive and path.startswith("/oauth/"):
        _oauth_client(case, method, path)
    if auth == "signed":
        _sign(case, headers, always=positive)
        case.headers = headers
    if (method, path) == ("POST", "/mcp"):
        _not_text_in_mcp(case)
