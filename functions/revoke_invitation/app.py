"""DELETE /minds/{mind_id}/invitations/{invitation_id} — withdraw an invitation at once."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import invitations


@endpoint
def handler(request: Request) -> Response:
    actor = request.principal.require_user("manage invitations")
    invitations.revoke(actor, request.path("mind_id"), request.path("invitation_id"))
    return Response.empty()
