"""GET /memory/{id} — one memory, expired ones included."""

from synapse import store
from synapse.http import Request, Response, endpoint


@endpoint
def handler(request: Request) -> Response:
    return Response.json(store.get_memory(request.mind_id(), request.path("id")).public())
