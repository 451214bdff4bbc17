"""GET /minds/{mind_id}/backup — a page of the mind's backup (docs/backup.md), for its owner."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import base_url
from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds
from synapse.portability import backup, format


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("back up a mind")
    mind = minds.get_mind(request.path("mind_id"))  # the owner role: ROUTE_ROLES, checked by endpoint
    limit = request.query_int("limit", backup.DEFAULT_LINES, 1, backup.MAX_LINES)
    page = backup.page(mind, owner, base_url(request), request.query_one("cursor"), limit)
    headers = {"Content-Type": format.CONTENT_TYPE}
    if page.next_cursor:
        headers["X-Next-Cursor"] = page.next_cursor
    return Response(200, page.body.decode("utf-8"), headers)
