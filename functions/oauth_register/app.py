"""POST /oauth/register — dynamic client registration (RFC 7591) for public clients."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.core.errors import BadRequest, UnsupportedMediaType
from synapse.oauth import clients
from synapse.oauth.errors import OAuthError


@oauth.endpoint
def handler(request: Request) -> Response:
    try:
        body = request.json_object()
    except (BadRequest, UnsupportedMediaType) as error:
        raise OAuthError("invalid_client_metadata", error.message) from None
    return oauth.json(clients.register(body, oauth.caller(request)), 201)
