"""POST /minds — a new mind, its creator as its owner, and its first Mind Key (shown once)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import MindWrite
from synapse.teams import members


@endpoint
def handler(request: Request) -> Response:
    principal = request.principal
    owner = principal.require_user("create minds")
    mind, key = members.create_mind(owner, principal.verified_email(), request.body(MindWrite).name)
    shown = {**mind.public(), "role": "owner"}
    return Response.json({"mind": shown, "mind_key": key}, 201, {"Location": f"/minds/{mind.id}"})
