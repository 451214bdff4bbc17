"""GET /minds/{mind_id}/webhooks — the mind's subscriptions, without secrets, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    page = subscriptions.list_owned(owner, request.path("mind_id"), *request.page())
    return Response.json({"webhooks": page.items, "next_cursor": page.next_cursor})
