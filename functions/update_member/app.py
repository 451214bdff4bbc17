"""PATCH /minds/{mind_id}/members/{user_id} — an owner changes a member's role."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import members


@endpoint
def handler(request: Request) -> Response:
    actor = request.principal.require_user("manage members")
    role = request.json_object().get("role")
    changed = members.change_role(actor, request.path("mind_id"), request.path("user_id"), str(role))
    return Response.json(changed)
