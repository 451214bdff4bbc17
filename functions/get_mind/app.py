"""GET /minds/{mind_id}"""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("read minds")
    return Response.json(minds.owned_mind(owner, request.path("mind_id")).public())
