"""DELETE /minds/{mind_id}/members/{user_id} — an owner removes a member, or a member leaves."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import members


@endpoint
def handler(request: Request) -> Response:
    actor = request.principal.require_user("manage members")
    role = request.mind_role()
    assert role is not None  # the route's rule (viewer) is checked for every person
    members.remove(actor, role, request.path("mind_id"), request.path("user_id"))
    return Response.empty()
