"""GET /.well-known/oauth-protected-resource[/mcp] (RFC 9728) and
GET /.well-known/oauth-authorization-server (RFC 8414): how a connector finds Synapse's OAuth."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import urls

DOCUMENTS = {
    "GET /.well-known/oauth-protected-resource": urls.protected_resource,
    "GET /.well-known/oauth-protected-resource/mcp": urls.protected_resource,
    "GET /.well-known/oauth-authorization-server": urls.authorization_server,
}


@oauth.endpoint
def handler(request: Request) -> Response:
    document = DOCUMENTS[str(request.event.get("routeKey"))]
    return Response.json(document(oauth.base(request)))
