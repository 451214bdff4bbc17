"""POST /memory — create (201) or replace by (category, key) (200)."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store
from synapse.memory.model import MemoryWrite


@endpoint
def handler(request: Request) -> Response:
    write = request.body(MemoryWrite)
    stored = store.store(request.mind_id(), write, request.principal.writer(write.source))
    if stored.created:
        return Response.json(stored.memory.public(), 201, {"Location": f"/memory/{stored.memory.id}"})
    return Response.json(stored.memory.public())
