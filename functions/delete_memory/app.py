"""DELETE /memory/{id} — for good."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    store.delete(request.mind_id(), request.path("id"))
    return Response.empty()
