"""GET /minds/{mind_id}/members — the mind's members and their roles, paginated (any member)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.teams import members


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("list a mind's members")
    page = members.list_members(request.path("mind_id"), *request.page())
    return Response.json({"members": page.items, "next_cursor": page.next_cursor})
