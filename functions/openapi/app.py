"""GET /openapi.json — the API's OpenAPI 3.1 document, served as committed beside this handler.

No authorizer: the document is public. `make openapi` generates it from the code and a test keeps
it equal to what the code generates, so nothing is built at run time (and no pydantic is loaded).
"""

from pathlib import Path

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import JSON_TYPE, Request, Response, public_endpoint

DOCUMENT = (Path(__file__).parent / "openapi.json").read_text(encoding="utf-8")


@public_endpoint
def handler(request: Request) -> Response:
    return Response(200, DOCUMENT, {"Content-Type": JSON_TYPE, "Cache-Control": "public, max-age=300"})
