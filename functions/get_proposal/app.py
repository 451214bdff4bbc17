"""GET /proposals/{id} — one proposal."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import proposals


@endpoint
def handler(request: Request) -> Response:
    return Response.json(proposals.get_proposal(request.mind_id(), request.path("id")))
