"""POST /proposals/{id}/accept — a person applies an agent's proposed change, vouching for it (or,
for a proposed delete, deletes the memory: then `memory` is null)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import proposals


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("accept proposals")
    proposal, memory = proposals.accept(
        request.mind_id(), request.path("id"), user, request.principal.changed_by()
    )
    return Response.json({"proposal": proposal, "memory": memory.public() if memory else None})
