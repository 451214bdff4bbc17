"""POST /oauth/requests/{request_id} — the person approves (a mind, scopes) or denies the app."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.oauth import consent


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("answer an app's request for access")
    redirect_to = consent.decide(user, request.path("request_id"), request.json_object())
    return Response.json({"redirect_to": redirect_to})
