"""GET /minds/{mind_id} — the mind, with the caller's role on it."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("read minds")
    role = request.mind_role()
    return Response.json({**minds.get_mind(request.path("mind_id")).public(), "role": role})
