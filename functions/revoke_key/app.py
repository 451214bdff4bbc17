"""DELETE /minds/{mind_id}/keys/{key_id} — revoke."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    minds.revoke_key(owner, request.path("mind_id"), request.path("key_id"))
    return Response.empty()
