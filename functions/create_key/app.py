"""POST /minds/{mind_id}/keys — a new Mind Key (shown once), with its scopes (default: all)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import KeyCreate
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    body = request.body(KeyCreate)
    key = minds.create_key(owner, request.path("mind_id"), body.label, body.scopes)
    return Response.json(key, 201)
