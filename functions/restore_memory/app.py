"""POST /memory/{id}/restore — a person brings back an earlier revision as a new version."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.memory import restore


@endpoint
def handler(request: Request) -> Response:
    user = request.principal.require_user("restore memories")
    body = request.body(restore.RestoreRequest)
    memory = restore.restore(
        request.mind_id(), request.path("id"), body.version, user, request.principal.changed_by()
    )
    return Response.json(memory.public())
