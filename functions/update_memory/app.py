"""PUT /memory/{id} — partial update, conditional on If-Match."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import store
from synapse.memory.model import MemoryPatch


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
