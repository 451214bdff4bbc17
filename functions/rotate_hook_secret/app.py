"""POST /minds/{mind_id}/hooks/{hook_id}/rotate — a new secret (shown once); the old one lives on
for `grace_seconds`."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import base_url
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import bodies, hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    grace = request.body(bodies.HookRotate).grace_seconds
    rotated = hooks.rotate_secret(
        owner, request.path("mind_id"), request.path("hook_id"), grace, base_url(request)
    )
    return Response.json(rotated)
