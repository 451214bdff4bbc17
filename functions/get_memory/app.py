"""GET /memory/{id} — one memory, expired ones included."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import writes


@endpoint
def handler(request: Request) -> Response:
    return Response.json(writes.read_by_id(request.mind_id(), request.path("id")).public())
