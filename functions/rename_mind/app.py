"""PATCH /minds/{mind_id} — rename."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory.model import MindWrite
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("rename minds")
    mind = minds.rename_mind(owner, request.path("mind_id"), request.body(MindWrite).name)
    return Response.json(mind.public())
