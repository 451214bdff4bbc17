"""DELETE /memory/{id} — the memory goes; its history stays 30 days, so it can be restored. An
agent's (or an editor's) delete of a verified memory becomes a proposal (202)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.auth import visibility
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    principal, mind = request.principal, request.addressed()
    stored = store.delete(
        mind.mind_id, request.path("id"), principal.changed_by(), principal.source, mind.vouches
    )
    if stored is not None:
        proposed = {"proposal": stored.proposal, "memory": stored.memory.public()}
        return Response.json(visibility.shown(principal, proposed), 202)  # no content without `read`
    return Response.empty()
