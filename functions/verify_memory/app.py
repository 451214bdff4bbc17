"""POST /memory/{id}/verify — a person vouches for a memory."""

from synapse import store
from synapse.http import Request, Response, endpoint


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("verify memories")
    return Response.json(store.verify(request.mind_id(), request.path("id"), user).public())
