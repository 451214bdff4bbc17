"""GET /openapi.json — the API's OpenAPI 3.1 document (the repository's openapi.json).

No authorizer: the document is public. It is built from the code on the first request and kept for
the life of the execution environment (built on the first request, not at import, so a route whose
operation is missing fails this one route, not the runner's start-up).
"""

from functools import cache

from synapse.api import openapi
from synapse.api.http import JSON_TYPE, Request, Response, public_endpoint

document = cache(openapi.render)


@public_endpoint
def handler(request: Request) -> Response:
    return Response(200, document(), {"Content-Type": JSON_TYPE, "Cache-Control": "public, max-age=300"})
