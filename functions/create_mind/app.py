"""POST /minds — a new mind and its first Mind Key (shown once)."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import MindWrite
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("create minds")
    mind, key = minds.create_mind(owner, request.body(MindWrite).name)
    return Response.json({"mind": mind.public(), "mind_key": key}, 201, {"Location": f"/minds/{mind.id}"})
