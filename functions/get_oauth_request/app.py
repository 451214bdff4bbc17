"""GET /oauth/requests/{request_id} — what the consent page shows: which app asks, for what."""

from synapse.api.http import Request, Response, endpoint
from synapse.oauth import consent


@endpoint
def handler(request: Request) -> Response:
    request.principal.require_user("answer an app's request for access")
    return Response.json(consent.describe(request.path("request_id")))
