"""DELETE /minds/{mind_id}/grants/{grant_id} — disconnect an app; its tokens stop working at once."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.oauth import revocation


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage connected apps")
    revocation.revoke_owned(owner, request.path("mind_id"), request.path("grant_id"))
    return Response.empty()
