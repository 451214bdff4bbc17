"""DELETE /memory/{id} — the memory goes; its history stays 30 days, so it can be restored."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    store.delete(request.mind_id(), request.path("id"), request.principal.changed_by())
    return Response.empty()
