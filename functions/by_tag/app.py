"""GET /memory/by-tag — memories carrying a tag (case-insensitive), recall order, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import queries
from synapse.api.http import Request, Response, endpoint
from synapse.memory import reads


@endpoint
def handler(request: Request) -> Response:
    page = reads.by_tag(
        request.mind_id(),
        queries.tag_query(request),
        *request.page(),
    )
    return Response.json({"memories": [m.public() for m in page.memories], "next_cursor": page.next_cursor})
