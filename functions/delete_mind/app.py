"""DELETE /minds/{mind_id} — the mind, its keys and every memory."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.lifecycle import mind_deletion


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("delete minds")
    mind_deletion.delete_mind(owner, request.path("mind_id"))
    return Response.empty()
