"""GET /memory/{id}/history — every revision of a memory, newest first; a deleted one's too."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import history


@endpoint
def handler(request: Request) -> Response:
    page = history.history(request.mind_id(), request.path("id"), *request.page())
    return Response.json({"revisions": [r.public() for r in page.items], "next_cursor": page.next_cursor})
