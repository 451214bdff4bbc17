"""POST /memory/{id}/verify — a person vouches for a memory."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("verify memories")
    memory = store.verify(request.mind_id(), request.path("id"), user, request.principal.changed_by())
    return Response.json(memory.public())
