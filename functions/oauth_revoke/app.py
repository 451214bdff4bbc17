"""POST /oauth/revoke — token revocation (RFC 7009): the app disconnects itself."""

from synapse.api import oauth
from synapse.api.http import Request, Response
from synapse.oauth import forms, revocation


@oauth.endpoint
def handler(request: Request) -> Response:
    revocation.revoke_token(forms.required(oauth.parameters(request), "token"))
    return oauth.json({})
