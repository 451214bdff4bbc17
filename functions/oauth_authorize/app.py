"""GET /oauth/authorize — check the authorization request, then send the browser to the review
console's consent view (or the error back to the client's registered redirect URI)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import consent, forms


@oauth.endpoint
def handler(request: Request) -> Response:
    params = forms.query(request.event.get("rawQueryString") or "")
    return oauth.redirect(consent.start(params, oauth.base(request), oauth.caller(request)))
