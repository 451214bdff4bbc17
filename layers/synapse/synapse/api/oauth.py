"""How the OAuth endpoints answer: OAuth's own error bodies (RFC 6749 §5.2) instead of SPEC's,
`Cache-Control: no-store` on anything carrying a token (§5.1), and the authorization endpoint's
redirect to the consent page. No error is redirected from here: one the client may hear of goes
through the consent page, by the signed-in person's choice (`synapse.oauth.consent`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synapse.api.http import Request, Response, public_endpoint
from synapse.core.observability import LambdaHandler
from synapse.oauth import forms, urls
from synapse.oauth.errors import OAuthError

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def json(payload: dict[str, Any], status: int = 200) -> Response:
    answer = Response.json(payload, status=status)
    return answer._replace(headers={**answer.headers, **NO_STORE})


def redirect(location: str) -> Response:
    return Response(302, "", {"Location": location, **NO_STORE})


def refused(error: OAuthError) -> Response:
    answer = json(error.body(), error.status)
    if error.challenge is None:
        return answer
    return answer._replace(headers={**answer.headers, "WWW-Authenticate": error.challenge})


def endpoint(function: Callable[[Request], Response]) -> LambdaHandler:
    """`http.public_endpoint` whose OAuthError becomes OAuth's answer; other errors stay SPEC's."""

    def answered(request: Request) -> Response:
        try:
            return function(request)
        except OAuthError as error:
            return refused(error)

    return public_endpoint(answered)


def parameters(request: Request) -> dict[str, str]:
    """The request's OAuth parameters: its form (or JSON) body, and the client_id of an HTTP Basic
    `Authorization` (RFC 6749 §2.3.1), which a client registered as confidential elsewhere may send
    even though Synapse issues no secret to check."""
    fields = forms.body(request.raw_body(), request.headers.get("content-type", ""))
    basic = forms.basic_client_id(request.headers.get("authorization", ""))
    if basic and fields.setdefault("client_id", basic) != basic:
        raise OAuthError(
            "invalid_request", "client_id differs between the body and the Authorization header."
        )
    return fields


def base(request: Request) -> str:
    return urls.base_url(request.event)


def caller(request: Request) -> str:
    """The address a request came from (API Gateway's sourceIp), for per-caller bounds."""
    source = ((request.event.get("requestContext") or {}).get("http") or {}).get("sourceIp")
    return str(source or "unknown")[:64]
