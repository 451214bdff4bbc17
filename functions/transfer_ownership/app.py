"""POST /minds/{mind_id}/transfer — another member becomes owner; the caller takes `keep_role`."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import members


@endpoint
def handler(request: Request) -> Response:
    actor = request.principal.require_user("transfer a mind")
    body = request.json_object()
    user_id, keep_role = body.get("user_id"), body.get("keep_role", "reviewer")
    changed = members.transfer(actor, request.path("mind_id"), str(user_id or ""), str(keep_role))
    return Response.json({"members": changed})
