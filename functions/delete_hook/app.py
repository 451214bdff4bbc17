"""DELETE /minds/{mind_id}/hooks/{hook_id} — revoke an inbound hook at once."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    hooks.delete_hook(owner, request.path("mind_id"), request.path("hook_id"))
    return Response.empty()
