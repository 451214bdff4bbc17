"""GET /oauth/requests/{request_id} — what the consent page shows: which app asks, for what."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.oauth import consent


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("answer an app's request for access")
    return Response.json(consent.describe(request.path("request_id")))
