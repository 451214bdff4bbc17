"""PATCH /minds/{mind_id} — rename, and/or change the mind's settings."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import MindPatch
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("change minds")
    body = request.body(MindPatch)
    mind = minds.update_mind(
        owner,
        request.path("mind_id"),
        name=body.name,
        agent_writes_to_verified=body.agent_writes_to_verified,
        history_retention_days=body.history_retention_days,
        agent_writes_critical=body.agent_writes_critical,
    )
    return Response.json({**mind.public(), "role": request.mind_role()})
