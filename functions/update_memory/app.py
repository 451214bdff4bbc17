"""PUT /memory/{id} — partial update, conditional on If-Match; an agent's (or an editor's) change to
a verified memory becomes a proposal (202)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.auth import visibility
from synapse.memory import repeats, store
from synapse.memory.model import MemoryPatch


@endpoint
def handler(request: Request) -> Response:
    patch = request.body(MemoryPatch)
    mind = request.addressed()
    stored = store.update(
        mind.mind_id,
        request.path("id"),
        patch,
        request.principal.writer(patch.source),
        request.if_match(),
        changed_by=request.principal.changed_by(),
        vouches=mind.vouches,
    )
    principal = request.principal
    if stored.proposal is not None:
        proposed = {"proposal": stored.proposal, "memory": stored.memory.public()}
        return Response.json(visibility.shown(principal, proposed), 202)
    body = {**stored.memory.public(), **repeats.similar_fields(stored)}
    return Response.json(visibility.shown(principal, body))
