"""PUT /memory/{id} — partial update, conditional on If-Match."""

from synapse import store
from synapse.http import Request, Response, endpoint
from synapse.model import MemoryPatch


@endpoint
def handler(request: Request) -> Response:
    patch = request.body(MemoryPatch)
    memory = store.update(
        request.mind_id(),
        request.path("id"),
        patch,
        request.principal.writer(patch.source),
        request.if_match(),
    )
    return Response.json(memory.public())
