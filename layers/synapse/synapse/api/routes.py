"""The API's routes (method, path) as template.yaml declares them, what each asks of its caller (a
Mind Key's scope, a person's role) and takes (its query parameters), and the answer for a request none
of them matches: 404, or 405 with `Allow` when the path exists under other methods.

API Gateway sends such a request to the `$default` route (functions/route_not_found); the local
gateway does the same. A unit test keeps `ROUTES` equal to template.yaml's HttpApi events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from synapse.core.errors import BadRequest, NotFound, SynapseError

ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/minds"),
    ("GET", "/minds"),
    ("GET", "/minds/{mind_id}"),
    ("PATCH", "/minds/{mind_id}"),
    ("DELETE", "/minds/{mind_id}"),
    ("POST", "/minds/{mind_id}/keys"),
    ("GET", "/minds/{mind_id}/keys"),
    ("DELETE", "/minds/{mind_id}/keys/{key_id}"),
    ("GET", "/minds/{mind_id}/audit"),
    ("GET", "/minds/{mind_id}/backup"),
    ("POST", "/minds/{mind_id}/restore"),
    ("POST", "/memory"),
    ("POST", "/memory/batch"),
    ("GET", "/memory"),
    ("GET", "/memory/{id}"),
    ("PUT", "/memory/{id}"),
    ("DELETE", "/memory/{id}"),
    ("POST", "/memory/{id}/verify"),
    ("GET", "/memory/{id}/history"),
    ("GET", "/memory/{id}/similar"),
    ("POST", "/memory/{id}/restore"),
    ("GET", "/proposals"),
    ("GET", "/proposals/{id}"),
    ("POST", "/proposals/{id}/accept"),
    ("POST", "/proposals/{id}/reject"),
    ("GET", "/memory/recall"),
    ("GET", "/memory/by-tag"),
    ("GET", "/memory/expiring"),
    ("GET", "/memory/search"),
    ("POST", "/minds/{mind_id}/webhooks"),
    ("GET", "/minds/{mind_id}/webhooks"),
    ("PATCH", "/minds/{mind_id}/webhooks/{webhook_id}"),
    ("DELETE", "/minds/{mind_id}/webhooks/{webhook_id}"),
    ("POST", "/minds/{mind_id}/webhooks/{webhook_id}/test"),
    ("GET", "/minds/{mind_id}/webhooks/{webhook_id}/deliveries"),
    ("POST", "/minds/{mind_id}/hooks"),
    ("GET", "/minds/{mind_id}/hooks"),
    ("DELETE", "/minds/{mind_id}/hooks/{hook_id}"),
    ("POST", "/minds/{mind_id}/hooks/{hook_id}/rotate"),
    ("POST", "/hooks/{hook_id}"),
    ("GET", "/openapi.json"),
    ("GET", "/console"),
    ("GET", "/console/{proxy+}"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("POST", "/oauth/register"),
    ("GET", "/oauth/authorize"),
    ("POST", "/oauth/token"),
    ("POST", "/oauth/revoke"),
    ("GET", "/oauth/requests/{request_id}"),
    ("POST", "/oauth/requests/{request_id}"),
    ("GET", "/minds/{mind_id}/grants"),
    ("DELETE", "/minds/{mind_id}/grants/{grant_id}"),
    ("GET", "/minds/{mind_id}/members"),
    ("PATCH", "/minds/{mind_id}/members/{user_id}"),
    ("DELETE", "/minds/{mind_id}/members/{user_id}"),
    ("POST", "/minds/{mind_id}/transfer"),
    ("POST", "/minds/{mind_id}/invitations"),
    ("GET", "/minds/{mind_id}/invitations"),
    ("DELETE", "/minds/{mind_id}/invitations/{invitation_id}"),
    ("POST", "/invitations/preview"),
    ("POST", "/invitations/accept"),
    ("POST", "/invitations/decline"),
)

# What a Mind Key must hold to use a route (docs/auth.md "Scopes"), by API Gateway route key. Routes
# not listed need no scope: they are JWT only (`require_user`) or public. A user holds every scope;
# a hook delivery holds only `write`. `http.endpoint` checks it before the handler runs.
ROUTE_SCOPES: dict[str, str] = {
    "GET /memory": "read",
    "GET /memory/{id}": "read",
    "GET /memory/recall": "read",
    "GET /memory/by-tag": "read",
    "GET /memory/expiring": "read",
    "GET /memory/search": "read",
    "GET /memory/{id}/history": "read",
    "GET /memory/{id}/similar": "read",
    "GET /proposals": "read",
    "GET /proposals/{id}": "read",
    "POST /memory": "write",
    "PUT /memory/{id}": "write",
    "POST /memory/batch": "write",
    "DELETE /memory/{id}": "delete",
}


# The role a person must hold on the mind a route addresses (docs/auth.md "Members and roles"), by
# route key: viewer < editor < reviewer < owner. Every route of ROUTES is here (a unit test keeps it
# so): a role, or a marker — PUBLIC (no credential, or it authenticates itself), SIGNED_IN (any
# person: the route addresses no mind, or checks the mind itself, as OAuth consent does for owner).
# A mind in the path (`{mind_id}`) is checked by `http.endpoint` before the handler runs, a mind in
# `X-Mind-Id` / `mind_id` by `Request.mind_id`; not a member is a 404, too low a role a 403. An
# agent's credential is held to its one mind and its scopes instead.
PUBLIC, SIGNED_IN = "public", "signed-in"
ROUTE_ROLES: dict[str, str] = {
    "POST /minds": SIGNED_IN,
    "GET /minds": SIGNED_IN,
    "GET /minds/{mind_id}": "viewer",
    "PATCH /minds/{mind_id}": "owner",
    "DELETE /minds/{mind_id}": "owner",
    "POST /minds/{mind_id}/keys": "owner",
    "GET /minds/{mind_id}/keys": "owner",
    "DELETE /minds/{mind_id}/keys/{key_id}": "owner",
    "GET /minds/{mind_id}/audit": "owner",
    "GET /minds/{mind_id}/backup": "owner",
    "POST /minds/{mind_id}/restore": "owner",
    "POST /memory": "editor",
    "POST /memory/batch": "editor",
    "GET /memory": "viewer",
    "GET /memory/{id}": "viewer",
    "PUT /memory/{id}": "editor",
    "DELETE /memory/{id}": "editor",
    "POST /memory/{id}/verify": "reviewer",
    "GET /memory/{id}/history": "viewer",
    "GET /memory/{id}/similar": "viewer",
    "POST /memory/{id}/restore": "reviewer",
    "GET /proposals": "viewer",
    "GET /proposals/{id}": "viewer",
    "POST /proposals/{id}/accept": "reviewer",
    "POST /proposals/{id}/reject": "reviewer",
    "GET /memory/recall": "viewer",
    "GET /memory/by-tag": "viewer",
    "GET /memory/expiring": "viewer",
    "GET /memory/search": "viewer",
    "POST /minds/{mind_id}/webhooks": "owner",
    "GET /minds/{mind_id}/webhooks": "owner",
    "PATCH /minds/{mind_id}/webhooks/{webhook_id}": "owner",
    "DELETE /minds/{mind_id}/webhooks/{webhook_id}": "owner",
    "POST /minds/{mind_id}/webhooks/{webhook_id}/test": "owner",
    "GET /minds/{mind_id}/webhooks/{webhook_id}/deliveries": "owner",
    "POST /minds/{mind_id}/hooks": "owner",
    "GET /minds/{mind_id}/hooks": "owner",
    "DELETE /minds/{mind_id}/hooks/{hook_id}": "owner",
    "POST /minds/{mind_id}/hooks/{hook_id}/rotate": "owner",
    "POST /hooks/{hook_id}": PUBLIC,
    "GET /openapi.json": PUBLIC,
    "GET /console": PUBLIC,
    "GET /console/{proxy+}": PUBLIC,
    # A person on /mcp addresses a mind as on /memory: reading needs viewer; each tool that writes
    # or deletes needs editor (`mcp.rpc`).
    "POST /mcp": "viewer",
    "GET /mcp": PUBLIC,
    "DELETE /mcp": PUBLIC,
    "GET /.well-known/oauth-protected-resource": PUBLIC,
    "GET /.well-known/oauth-protected-resource/mcp": PUBLIC,
    "GET /.well-known/oauth-authorization-server": PUBLIC,
    "POST /oauth/register": PUBLIC,
    "GET /oauth/authorize": PUBLIC,
    "POST /oauth/token": PUBLIC,
    "POST /oauth/revoke": PUBLIC,
    "GET /oauth/requests/{request_id}": SIGNED_IN,
    "POST /oauth/requests/{request_id}": SIGNED_IN,  # approving for a mind needs its owner (oauth.consent)
    "GET /minds/{mind_id}/grants": "owner",
    "DELETE /minds/{mind_id}/grants/{grant_id}": "owner",
    "GET /minds/{mind_id}/members": "viewer",
    "PATCH /minds/{mind_id}/members/{user_id}": "owner",
    # Any member may remove themselves (leave); removing another needs owner (teams.members.remove).
    "DELETE /minds/{mind_id}/members/{user_id}": "viewer",
    "POST /minds/{mind_id}/transfer": "owner",
    "POST /minds/{mind_id}/invitations": "owner",
    "GET /minds/{mind_id}/invitations": "owner",
    "DELETE /minds/{mind_id}/invitations/{invitation_id}": "owner",
    "POST /invitations/preview": SIGNED_IN,
    "POST /invitations/accept": SIGNED_IN,
    "POST /invitations/decline": SIGNED_IN,
}
MARKERS = frozenset({PUBLIC, SIGNED_IN})

# The query parameters each route takes (docs/api.md#query-parameters), by route key: every route of
# ROUTES is here (a unit test keeps it so, and one that the OpenAPI document names the same). Any
# other parameter is a 400 naming it and these (`check_query`, in `http.endpoint` before the handler
# runs), so a misspelt or unsupported filter (`?since=`) is never silently ignored. `mind_id` is how
# a person may name the mind a memory route addresses (as `X-Mind-Id` does).
_PAGE = ("limit", "cursor")
_MIND = ("mind_id",)
_WHEN = ("after", "before")  # created_at, or occurred_at where set, in a window
ROUTE_QUERIES: dict[str, tuple[str, ...]] = {
    "POST /minds": (),
    "GET /minds": _PAGE,
    "GET /minds/{mind_id}": (),
    "PATCH /minds/{mind_id}": (),
    "DELETE /minds/{mind_id}": (),
    "POST /minds/{mind_id}/keys": (),
    "GET /minds/{mind_id}/keys": _PAGE,
    "DELETE /minds/{mind_id}/keys/{key_id}": (),
    "GET /minds/{mind_id}/audit": _PAGE,
    "GET /minds/{mind_id}/backup": _PAGE,
    "POST /minds/{mind_id}/restore": ("last",),
    "POST /memory": _MIND,
    "POST /memory/batch": _MIND,
    "GET /memory": (
        *("category", "tag", "priority", "source", "verified", "include_expired", "include_superseded"),
        *_WHEN,
        "updated_after",
        *_PAGE,
        *_MIND,
    ),
    "GET /memory/{id}": _MIND,
    "PUT /memory/{id}": _MIND,
    "DELETE /memory/{id}": _MIND,
    "POST /memory/{id}/verify": _MIND,
    "GET /memory/{id}/history": (*_PAGE, *_MIND),
    "GET /memory/{id}/similar": _MIND,
    "POST /memory/{id}/restore": _MIND,
    "GET /proposals": ("status", "memory_id", "category", *_PAGE, *_MIND),
    "GET /proposals/{id}": _MIND,
    "POST /proposals/{id}/accept": _MIND,
    "POST /proposals/{id}/reject": _MIND,
    "GET /memory/recall": (
        *("category", "tag", "limit", "max_chars", "format", "q", "include_superseded"),
        *_WHEN,
        *("now", "tz"),
        *_MIND,
    ),
    "GET /memory/by-tag": (
        "tag",
        "category",
        "include_expired",
        "include_superseded",
        *_WHEN,
        *_PAGE,
        *_MIND,
    ),
    "GET /memory/expiring": ("within", "include_superseded", *_PAGE, *_MIND),
    "GET /memory/search": (
        *("q", "tag", "category", "priority", "include_expired", "include_superseded", "mode"),
        *_WHEN,
        *("now", "tz"),
        *_PAGE,
        *_MIND,
    ),
    "POST /minds/{mind_id}/webhooks": (),
    "GET /minds/{mind_id}/webhooks": _PAGE,
    "PATCH /minds/{mind_id}/webhooks/{webhook_id}": (),
    "DELETE /minds/{mind_id}/webhooks/{webhook_id}": (),
    "POST /minds/{mind_id}/webhooks/{webhook_id}/test": (),
    "GET /minds/{mind_id}/webhooks/{webhook_id}/deliveries": ("limit",),
    "POST /minds/{mind_id}/hooks": (),
    "GET /minds/{mind_id}/hooks": _PAGE,
    "DELETE /minds/{mind_id}/hooks/{hook_id}": (),
    "POST /minds/{mind_id}/hooks/{hook_id}/rotate": (),
    "POST /hooks/{hook_id}": (),
    "GET /openapi.json": (),
    "GET /console": (),
    "GET /console/{proxy+}": (),
    "POST /mcp": _MIND,
    "GET /mcp": _MIND,
    "DELETE /mcp": _MIND,
    "GET /.well-known/oauth-protected-resource": (),
    "GET /.well-known/oauth-protected-resource/mcp": (),
    "GET /.well-known/oauth-authorization-server": (),
    "POST /oauth/register": (),
    "GET /oauth/authorize": (
        *("response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method"),
        *("scope", "resource"),
    ),
    "POST /oauth/token": (),
    "POST /oauth/revoke": (),
    "GET /oauth/requests/{request_id}": (),
    "POST /oauth/requests/{request_id}": (),
    "GET /minds/{mind_id}/grants": _PAGE,
    "DELETE /minds/{mind_id}/grants/{grant_id}": (),
    "GET /minds/{mind_id}/members": _PAGE,
    "PATCH /minds/{mind_id}/members/{user_id}": (),
    "DELETE /minds/{mind_id}/members/{user_id}": (),
    "POST /minds/{mind_id}/transfer": (),
    "POST /minds/{mind_id}/invitations": (),
    "GET /minds/{mind_id}/invitations": _PAGE,
    "DELETE /minds/{mind_id}/invitations/{invitation_id}": (),
    "POST /invitations/preview": (),
    "POST /invitations/accept": (),
    "POST /invitations/decline": (),
}
# Routes that ignore a parameter they do not know, as their standard requires, each with why. What
# they take is still listed above (the OpenAPI document names it).
IGNORES_UNKNOWN_QUERY: dict[str, str] = {
    "GET /oauth/authorize": "RFC 6749 §3.1: the authorization server MUST ignore unrecognized request "
    "parameters (a client may send OpenID Connect's, say: nonce, prompt)",
    "POST /oauth/token": "RFC 6749 §3.2: the token endpoint MUST ignore unrecognized request parameters",
    "POST /oauth/revoke": "RFC 7009 §2: the revocation endpoint's URL follows RFC 6749 §3.1's rules, "
    "which ignore unrecognized request parameters",
    "GET /console": "a page: its query is the browser's, read by the page's script (the sign-in comes "
    "back to it with ?code=…&state=…, RFC 6749 §4.1.2)",
    "GET /console/{proxy+}": "the console's files: a browser's query (a cache buster, say) is not the API's",
}
_SHOWN_PARAMETERS = 10  # unknown names echoed in one answer, each cut short: a client sent them
_SHOWN_NAME_CHARS = 80


def required_role(route_key: str | None) -> str | None:
    """The role a person needs on the mind the route addresses; None for a marker (no mind). A
    route missing from the table (none is: a unit test checks) fails closed: owner."""
    rule = ROUTE_ROLES.get(route_key or "", "owner")
    return None if rule in MARKERS else rule


def required_scope(route_key: str | None) -> str | None:
    """The scope a Mind Key needs for the route (`"GET /memory"`), None when no scope is needed."""
    return ROUTE_SCOPES.get(route_key or "")


def check_query(route_key: str | None, names: Iterable[str]) -> None:
    """400 naming each query parameter the route does not take, and those it takes (ROUTE_QUERIES);
    nothing for a route that ignores unknown ones or one outside the table (the `$default` route)."""
    known = ROUTE_QUERIES.get(route_key or "")
    if known is None or route_key in IGNORES_UNKNOWN_QUERY:
        return
    unknown = sorted(set(names) - set(known))[:_SHOWN_PARAMETERS]
    if not unknown:
        return
    shown = [name if len(name) <= _SHOWN_NAME_CHARS else name[:_SHOWN_NAME_CHARS] + "…" for name in unknown]
    takes = f"{route_key} takes {', '.join(known)}" if known else f"{route_key} takes no query parameter"
    message = "not a query parameter of this route"
    raise BadRequest(
        f"{', '.join(shown)}: unknown query parameter{'s' if len(shown) > 1 else ''}; {takes}.",
        details=[
            {"field": name, "rule": "unknown", "message": message, "known": list(known)} for name in shown
        ],
    )


_SHOWN_PATH_CHARS = 200  # an unmatched path is echoed, cut short: it may be anything a client sent


class MethodNotAllowed(SynapseError):
    status, code = 405, "method_not_allowed"


@cache
def _pattern(path: str) -> re.Pattern[str]:
    """`/memory/{id}` → one path segment per {param}, as API Gateway matches it."""
    one_segment = re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path))
    return re.compile("^" + re.sub(r"\\\{\w+\\\+\\\}", ".+", one_segment) + "$")  # {proxy+}: the rest


def allowed_methods(path: str) -> list[str]:
    """The methods some route serves at `path` (empty when no route has this path)."""
    return sorted({method for method, route in ROUTES if _pattern(route).match(path)})


def front_door(accept: str) -> tuple[int, dict[str, str], dict[str, str] | None]:
    """`GET /`, the address the runner's banner and a deployment's output print: a browser (it
    accepts HTML) goes on to the review console; anything else gets where the API is described.
    (status, headers, JSON body or None)."""
    if "text/html" in accept.lower():
        return 302, {"Location": "/console"}, None
    return 200, {}, {"service": "synapse", "console": "/console", "openapi": "/openapi.json", "mcp": "/mcp"}


def unmatched(method: str, path: str) -> SynapseError:
    """The error for a request no route matched: 405 with `Allow` if the path exists, else 404."""
    shown = path if len(path) <= _SHOWN_PATH_CHARS else path[:_SHOWN_PATH_CHARS] + "…"
    allowed = allowed_methods(path)
    if not allowed:
        return NotFound(
            f"No route {method} {shown}: see docs/api.md for the routes (paths have no trailing slash)."
        )
    return MethodNotAllowed(
        f"{shown} answers {', '.join(allowed)}, not {method}.",
        details=[{"allowed": allowed}],
        headers={"Allow": ", ".join(allowed)},
    )
