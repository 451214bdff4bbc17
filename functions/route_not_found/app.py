"""$default — every request no route matches: SPEC's 404, or 405 with `Allow` for a known path.

No authorizer: an unknown route answers the same with or without a credential. Without this route
API Gateway would answer its own `{"message": "Not Found"}`, outside SPEC's error body. Under
/console (a method other than GET) the 405 carries the console's security headers, as every answer
there does (`console.endpoint`); elsewhere it is `http.public_endpoint`'s answer as it is.
"""

from synapse.api import console, routes
from synapse.api.http import Request, Response


@console.endpoint
def handler(request: Request) -> Response:
    http = (request.event.get("requestContext") or {}).get("http") or {}
    raise routes.unmatched(str(http.get("method", "")), str(request.event.get("rawPath") or "/"))
