"""GET /minds/{mind_id}/keys — keys without secrets, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    page = minds.list_keys(owner, request.path("mind_id"), *request.page())
    return Response.json({"keys": page.items, "next_cursor": page.next_cursor})
