"""POST /oauth/revoke — token revocation (RFC 7009): the app disconnects itself (its own tokens only)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import revocation


@oauth.endpoint
def handler(request: Request) -> Response:
    revocation.revoke_token(oauth.parameters(request))
    return oauth.json({})
