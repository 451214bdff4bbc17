"""$default — every request no route matches: SPEC's 404, or 405 with `Allow` for a known path.

No authorizer: an unknown route answers the same with or without a credential. Without this route
API Gateway would answer its own `{"message": "Not Found"}`, outside SPEC's error body.
"""

from synapse.api import routes
from synapse.api.http import Request, Response, public_endpoint


@public_endpoint
def handler(request: Request) -> Response:
    http = (request.event.get("requestContext") or {}).get("http") or {}
    raise routes.unmatched(str(http.get("method", "")), str(request.event.get("rawPath") or "/"))
