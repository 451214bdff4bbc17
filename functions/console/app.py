"""GET /console and GET /console/{proxy+} — the review console's page, scripts and styles.

No authorizer: the page is public; it signs the person in and calls the API with their JWT. The files
live in static/ beside this handler; synapse.api.console serves them with their security headers.
"""

from pathlib import Path

from synapse.api import console
from synapse.api.http import Request, Response, public_endpoint

STATIC = Path(__file__).resolve().parent / "static"


@public_endpoint
def handler(request: Request) -> Response:
    return console.serve(request, STATIC)
