"""GET /proposals/{id} — one proposal."""

from synapse.api.http import Request, Response, endpoint
from synapse.memory import proposals


@endpoint
def handler(request: Request) -> Response:
    return Response.json(proposals.get_proposal(request.mind_id(), request.path("id")))
