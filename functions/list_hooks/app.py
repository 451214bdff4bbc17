"""GET /minds/{mind_id}/hooks — the mind's inbound hooks, without secrets, paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import base_url
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    page = hooks.list_hooks(owner, request.path("mind_id"), base_url(request), *request.page())
    return Response.json({"hooks": page.items, "next_cursor": page.next_cursor})
