"""POST /oauth/revoke — token revocation (RFC 7009): the app disconnects itself."""

from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import forms, grants


@oauth.endpoint
def handler(request: Request) -> Response:
    grants.revoke_token(forms.required(oauth.parameters(request), "token"))
    return oauth.json({})
