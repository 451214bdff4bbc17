"""GET /memory/expiring — memories expiring within a window (default 7d), soonest first, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import queries
from synapse.api.http import Request, Response, endpoint
from synapse.memory import expiring_reads


@endpoint
def handler(request: Request) -> Response:
    page = expiring_reads.expiring(
        request.mind_id(),
        queries.parse_within(request.query_one("within")),
        *request.page(),
        include_superseded=queries.include_superseded(request),
    )
    return Response.json({"memories": [m.public() for m in page.memories], "next_cursor": page.next_cursor})
