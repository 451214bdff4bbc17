"""POST /memory/{id}/verify — a person vouches for a memory."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("verify memories")
    memory = store.verify(request.mind_id(), request.path("id"), user, request.principal.changed_by())
    return Response.json(memory.public())
