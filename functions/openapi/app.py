"""GET /openapi.json — the API's OpenAPI 3.1 document (the repository's openapi.json).

No authorizer: the document is public. It is built from the code once per cold start.
"""

from synapse.api import openapi
from synapse.api.http import JSON_TYPE, Request, Response, public_endpoint

DOCUMENT = openapi.render()


@public_endpoint
def handler(request: Request) -> Response:
    return Response(200, DOCUMENT, {"Content-Type": JSON_TYPE, "Cache-Control": "public, max-age=300"})
