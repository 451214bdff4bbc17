"""GET /memory/{id} — one memory, expired ones included."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    return Response.json(store.get_memory(request.mind_id(), request.path("id")).public())
