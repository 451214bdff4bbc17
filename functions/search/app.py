"""GET /memory/search — words and meaning over the mind's current index snapshot, hydrated from DynamoDB."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import queries
from synapse.api.http import Request, Response, endpoint
from synapse.search import service


@endpoint
def handler(request: Request) -> Response:
    now, zone = queries.asker_clock(request)
    page = service.search(
        request.mind_id(),
        request.query_one("q"),
        queries.search_filters(request),
        *request.page(),
        mode=queries.search_mode(request),
        now=now,
        zone=zone,
    )
    return Response.json(page.public())
