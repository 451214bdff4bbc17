"""GET /proposals — agents' changes to verified memories, newest first, filtered, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import proposals
from synapse.memory.kinds import Category


@endpoint
def handler(request: Request) -> Response:
    filters = {
        "status": request.query_choice("status", proposals.Status),
        "category": request.query_choice("category", Category),
        "memory_id": request.query_one("memory_id"),
    }
    page = proposals.list_proposals(request.mind_id(), filters, *request.page())
    return Response.json({"proposals": page.items, "next_cursor": page.next_cursor})
