"""DELETE /minds/{mind_id}/keys/{key_id} — revoke."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    minds.revoke_key(owner, request.path("mind_id"), request.path("key_id"))
    return Response.empty()
