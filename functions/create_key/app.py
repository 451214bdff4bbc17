"""POST /minds/{mind_id}/keys — a new Mind Key (shown once)."""

from synapse import minds
from synapse.http import Request, Response, endpoint
from synapse.model import KeyWrite


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    key = minds.create_key(owner, request.path("mind_id"), request.body(KeyWrite).label)
    return Response.json(key, 201)
