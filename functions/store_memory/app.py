"""POST /memory — create (201) or replace by (category, key) (200); an agent's change to a verified
memory becomes a proposal (202), as does an editor's (a person who may not vouch)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.auth import visibility
from synapse.memory import repeats, store
from synapse.memory.model import MemoryWrite
from synapse.search import on_write


@endpoint
def handler(request: Request) -> Response:
    write = request.body(MemoryWrite)
    principal, mind = request.principal, request.addressed()
    stored = store.store(
        mind.mind_id,
        write,
        principal.writer(write.source),
        changed_by=principal.changed_by(),
        vouches=mind.vouches,
        similar=on_write.similar_to,
    )
    if stored.proposal is not None:
        proposed = {"proposal": stored.proposal, "memory": stored.memory.public()}
        return Response.json(visibility.shown(principal, proposed), 202)
    body = {**stored.memory.public(), **repeats.similar_fields(stored)}
    body = visibility.shown(principal, body)  # no content nor `similar` without `read`
    if stored.created:
        return Response.json(body, 201, {"Location": f"/memory/{stored.memory.id}"})
    return Response.json(body)
