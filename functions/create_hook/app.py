"""POST /minds/{mind_id}/hooks — a new inbound hook: its URL and signing secret (shown once)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import base_url
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import bodies, hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    label = request.body(bodies.HookWrite).label
    hook = hooks.create_hook(owner, request.path("mind_id"), label, base_url(request))
    return Response.json(hook, 201)
