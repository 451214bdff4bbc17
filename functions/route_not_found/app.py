"""$default — every request no route matches: SPEC's 404, or 405 with `Allow` for a known path;
and `GET /`, the front door: a browser goes on to the console, an agent reads where the API is.

No authorizer: an unknown route answers the same with or without a credential. Without this route
API Gateway would answer its own `{"message": "Not Found"}`, outside SPEC's error body. Under
/console (a method other than GET) the 405 carries the console's security headers, as every answer
there does (`console.endpoint`); elsewhere it is `http.public_endpoint`'s answer as it is.
"""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import console, routes
from synapse.api.http import Request, Response


@console.endpoint
def handler(request: Request) -> Response:
    http = (request.event.get("requestContext") or {}).get("http") or {}
    method, path = str(http.get("method", "")), str(request.event.get("rawPath") or "/")
    if path == "/" and method in ("GET", "HEAD"):
        status, headers, body = routes.front_door(request.headers.get("accept", ""))
        return Response.json(body, status) if body is not None else Response(status, "", headers)
    raise routes.unmatched(method, path)
