"""GET /console and GET /console/{proxy+} — the review console's page, scripts and styles.

No authorizer: the page is public; it signs the person in and calls the API with their JWT. The files
live in static/ beside this handler; synapse.api.console serves them, and its `endpoint` gives every
answer (its 404s and 500s too) the console's security headers.
"""

from pathlib import Path

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import console
from synapse.api.http import Request, Response

STATIC = Path(__file__).resolve().parent / "static"


@console.endpoint
def handler(request: Request) -> Response:
    return console.serve(request, STATIC)
