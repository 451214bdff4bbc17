"""POST /invitations/preview, /invitations/accept and /invitations/decline — the invited person,
signed in with their own JWT, sees what an invitation's token offers, joins, or turns it down."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.core.errors import NotFound
from synapse.teams import invitations


@endpoint
def handler(request: Request) -> Response:
    principal = request.principal
    principal.require_user("answer an invitation")
    token = request.json_object().get("token")
    route = str(request.event.get("routeKey"))
    if route == "POST /invitations/preview":
        return Response.json(invitations.preview(token))
    if route == "POST /invitations/accept":
        return Response.json(invitations.accept(principal, token))
    if route == "POST /invitations/decline":
        invitations.decline(principal, token)
        return Response.empty()
    raise NotFound(f"No route {route[:80]}.")
