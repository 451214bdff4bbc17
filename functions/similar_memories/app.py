"""GET /memory/{id}/similar — the memories a stored memory may replace (a write's `similar`, asked
again later: the console's review queue), each with the memory itself."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.search.similar_memories import similar_memories


@endpoint
def handler(request: Request) -> Response:
    return Response.json(similar_memories(request.mind_id(), request.path("id")))
