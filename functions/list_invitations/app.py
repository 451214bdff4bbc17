"""GET /minds/{mind_id}/invitations — the mind's pending invitations (no tokens), paginated."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import invitations


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("manage invitations")
    page = invitations.list_pending(request.path("mind_id"), *request.page())
    return Response.json({"invitations": page.items, "next_cursor": page.next_cursor})
