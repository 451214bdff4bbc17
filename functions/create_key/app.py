"""POST /minds/{mind_id}/keys — a new Mind Key (shown once)."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import KeyWrite
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    key = minds.create_key(owner, request.path("mind_id"), request.body(KeyWrite).label)
    return Response.json(key, 201)
