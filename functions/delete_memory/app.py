"""DELETE /memory/{id} — for good."""

from synapse import store
from synapse.http import Request, Response, endpoint


@endpoint
def handler(request: Request) -> Response:
    store.delete(request.mind_id(), request.path("id"))
    return Response.empty()
