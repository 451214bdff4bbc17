"""POST /hooks/{hook_id} — a signed delivery of one memory or a batch, stored as `source: agent`.

No JWT or Mind Key: the route has no authorizer; `Synapse-Signature` authenticates the request.
"""

from synapse.api.http import Request, Response, public_endpoint
from synapse.webhooks import hooks


@public_endpoint
def handler(request: Request) -> Response:
    delivered = hooks.receive(request)
    return Response.json(delivered.body, delivered.status, delivered.headers)
