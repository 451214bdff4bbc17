"""GET /minds/{mind_id}/grants — the apps connected to a mind through OAuth."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.oauth import revocation


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage connected apps")
    page = revocation.owned_grants(owner, request.path("mind_id"), *request.page())
    return Response.json({"grants": page.items, "next_cursor": page.next_cursor})
