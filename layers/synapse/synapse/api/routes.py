"""The API's routes (method, path) as template.yaml declares them, and the answer for a request none
of them matches: 404, or 405 with `Allow` when the path exists under other methods.

API Gateway sends such a request to the `$default` route (functions/route_not_found); the local
gateway does the same. A unit test keeps `ROUTES` equal to template.yaml's HttpApi events.
"""

from __future__ import annotations

import re
from functools import cache

from synapse.core.errors import NotFound, SynapseError

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


def required_role(route_key: str | None) -> str | None:
    """The role a person needs on the mind the route addresses; None for a marker (no mind). A
    route missing from the table (none is: a unit test checks) fails closed: owner."""
    rule = ROUTE_ROLES.get(route_key or "", "owner")
    return None if rule in MARKERS else rule


def required_scope(route_key: str | None) -> str | None:
    """The scope a Mind Key needs for the route (`"GET /memory"`), None when no scope is needed."""
    return ROUTE_SCOPES.get(route_key or "")


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
