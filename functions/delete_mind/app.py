"""DELETE /minds/{mind_id} — the mind, its keys and every memory."""

from synapse.api.http import Request, Response, endpoint
from synapse.lifecycle import mind_deletion


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("delete minds")
    mind_deletion.delete_mind(owner, request.path("mind_id"))
    return Response.empty()
