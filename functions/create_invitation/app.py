"""POST /minds/{mind_id}/invitations — invite a person by email or user id (token shown once)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.oauth import urls
from synapse.teams import invitations


@endpoint
def handler(request: Request) -> Response:
    actor = request.principal.require_user("invite members")
    base = urls.base_url(request.event)
    created = invitations.create(actor, request.path("mind_id"), request.json_object(), base)
    return Response.json(created, 201)
