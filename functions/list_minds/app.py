"""GET /minds — the minds the caller is a member of, with their role and memory counts, oldest
joined first, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import directory


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("list minds")
    page = directory.list_minds(user, *request.page())
    return Response.json({"minds": [m.public() for m in page.items], "next_cursor": page.next_cursor})
