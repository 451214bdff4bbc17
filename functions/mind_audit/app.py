"""GET /minds/{mind_id}/audit — who changed the mind's credentials and settings, newest first."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("read a mind's audit")
    page = minds.audit_events(owner, request.path("mind_id"), *request.page())
    return Response.json({"events": page.items, "next_cursor": page.next_cursor})
