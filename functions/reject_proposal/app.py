"""POST /proposals/{id}/reject — a person turns an agent's proposed change down."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import proposals


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("reject proposals")
    proposal, memory = proposals.reject(request.mind_id(), request.path("id"), request.principal.changed_by())
    return Response.json({"proposal": proposal, "memory": memory.public() if memory else None})
