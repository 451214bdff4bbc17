"""POST /memory/{id}/verify — a person vouches for a memory."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("verify memories")
    return Response.json(store.verify(request.mind_id(), request.path("id"), user).public())
