"""POST /oauth/token — an authorization code (with its PKCE verifier) or a refresh token → tokens."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import tokens
from synapse.oauth.errors import OAuthError

GRANTS = {"authorization_code": tokens.exchange_code, "refresh_token": tokens.refresh}


@oauth.endpoint
def handler(request: Request) -> Response:
    fields = oauth.parameters(request)
    exchange = GRANTS.get(fields.get("grant_type", ""))
    if exchange is None:
        raise OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
    return oauth.json(exchange(fields))
