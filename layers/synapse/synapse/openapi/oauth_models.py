"""OAuth's JSON as pydantic models, used only to describe it (`synapse.openapi.oauth`): the answers
of the metadata, registration, token and consent endpoints, OAuth's own error body, and the request
bodies, as strict as the server is (`synapse.oauth`: a value it refuses is outside the schema).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.json_schema import SkipJsonSchema

from synapse.oauth import clients, forms, redirects
from synapse.openapi.schemas import _Answer

OAuthScope = Literal["read", "write", "delete"]


class ProtectedResourceMetadata(_Answer):
    """RFC 9728: what `/mcp` is and which authorization server issues its tokens."""

    resource: str = Field(description="<base>/mcp: the resource a token is bound to (RFC 8707).")
    authorization_servers: list[str]
    scopes_supported: list[OAuthScope]
    bearer_methods_supported: list[Literal["header"]]
    resource_name: str
    resource_documentation: str


class AuthorizationServerMetadata(_Answer):
    """RFC 8414: public clients only, the code flow with PKCE S256."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str
    revocation_endpoint: str
    scopes_supported: list[OAuthScope]
    response_types_supported: list[Literal["code"]]
    response_modes_supported: list[Literal["query"]]
    grant_types_supported: list[Literal["authorization_code", "refresh_token"]]
    token_endpoint_auth_methods_supported: list[Literal["none"]]
    revocation_endpoint_auth_methods_supported: list[Literal["none"]]
    code_challenge_methods_supported: list[Literal["S256"]]
    service_documentation: str


class ClientRegistration(_Answer):
    """RFC 7591 §3.2.1: a public client (no secret); unused for 24 h, it expires."""

    client_id: str
    client_id_issued_at: int
    client_name: str
    redirect_uris: list[str]
    grant_types: list[Literal["authorization_code", "refresh_token"]]
    response_types: list[Literal["code"]]
    token_endpoint_auth_method: Literal["none"]


class TokenAnswer(_Answer):
    """RFC 6749 §5.1; the refresh token works once (each use rotates both)."""

    access_token: str = Field(description="oat_…: for /mcp only (the REST API refuses it).")
    token_type: Literal["Bearer"]
    expires_in: int
    refresh_token: str = Field(description="ort_…: presented twice, it revokes the grant.")
    scope: str = Field(description="The granted scopes, space-separated.")


class OAuthErrorAnswer(_Answer):
    """OAuth's error body (RFC 6749 §5.2, RFC 7591 §3.2.2), which OAuth clients parse: the OAuth
    endpoints answer it instead of the Error envelope (but for 413 and 429)."""

    error: Literal[
        "invalid_request",
        "invalid_client",
        "invalid_grant",
        "unsupported_grant_type",
        "invalid_target",
        "invalid_redirect_uri",
        "invalid_client_metadata",
    ]
    error_description: str


class OAuthRequestClient(_Answer):
    id: str
    name: str
    redirect_host: str = Field(description="Where the answer goes: the redirect URI's host[:port].")


class OAuthRequestError(_Answer):
    """Why a request cannot be approved (RFC 6749 §4.1.2.1): denying it sends this to the client."""

    error: Literal["invalid_request", "unsupported_response_type", "invalid_target"]
    error_description: str


class OAuthRequestView(_Answer):
    """What the consent page shows: who asks, for what, until when; or why it cannot be approved."""

    id: str
    client: OAuthRequestClient
    scopes: list[OAuthScope] = Field(description="What the client asked for (all three when it named none).")
    resource: str
    expires_at: str
    error: OAuthRequestError | None = Field(
        description="Set when the request itself is wrong: it can only be denied, which sends the"
        " error back to the client (Synapse never redirects an error before you have seen it)."
    )


class ConsentAnswer(_Answer):
    redirect_to: str = Field(
        description="The client's redirect URI with code and state (or error=access_denied): go there."
    )


class Grant(_Answer):
    """A connected app: one client's access to one mind, with its scopes."""

    id: str
    client_id: str
    client_name: str
    redirect_host: str
    scopes: list[OAuthScope]
    created_at: str
    last_used_at: str | None


class GrantPage(_Answer):
    grants: list[Grant]
    next_cursor: str | None


# ---------------------------------------------------------------- OAuth requests (bodies, described)

_PORT = "(?::(?:[0-9]|[1-9][0-9]{1,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
# https with a host, or http on a loopback address; no credentials, no fragment, and no control
# character, space or backslash anywhere (`redirects`).
REDIRECT_URI = (
    r"^(?:https://[A-Za-z0-9.-]+|http://(?:127\.0\.0\.1|localhost|\[::1\]))"
    + _PORT
    + f"(?:[/?][^{redirects.REFUSED}]*)?$"
)
CODE_VERIFIER = "^[A-Za-z0-9._~-]{43,128}$"  # RFC 7636 §4.1
_VALUE = {"maxLength": forms.MAX_VALUE_CHARS}  # every OAuth parameter is bounded (`forms`)
_TEXT = {"minLength": 1, **_VALUE}


def _value(description: str = "", **rules: Any) -> Any:
    return Field(min_length=1, json_schema_extra={**_VALUE, **rules}, description=description or None)


def _optional(description: str = "", **rules: Any) -> Any:
    """A field that may be left out but is never null (the server refuses a null or an empty value)."""

    def shown(schema: dict[str, Any]) -> None:
        schema.pop("default", None)
        schema.update(rules)

    return Field(default=None, description=description or None, json_schema_extra=shown)


class ClientMetadata(BaseModel):
    """The body of `POST /oauth/register` (RFC 7591 §2): a public client's redirect URIs and name."""

    redirect_uris: list[str] = Field(
        min_length=1,
        max_length=clients.MAX_REDIRECT_URIS,
        json_schema_extra={
            "items": {
                "type": "string",
                "minLength": 1,
                "maxLength": redirects.MAX_URI_CHARS,
                "pattern": REDIRECT_URI,
            }
        },
        description="https, or http on 127.0.0.1, [::1] or localhost (any port when requested); no"
        " credentials, fragment, control character, space or backslash.",
    )
    client_name: str | SkipJsonSchema[None] = _optional(
        "Shown on the consent page.", minLength=1, maxLength=clients.MAX_NAME_CHARS, pattern=r"\S"
    )
    grant_types: list[Literal["authorization_code", "refresh_token"]] | SkipJsonSchema[None] = _optional()
    response_types: list[Literal["code"]] | SkipJsonSchema[None] = _optional()
    token_endpoint_auth_method: str | SkipJsonSchema[None] = _optional(
        "Any is answered as none: there is no client secret."
    )


class _Form(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AuthorizationCodeRequest(_Form):
    grant_type: Literal["authorization_code"]
    code: str = _value("oac_…, from the redirect: works once, for 5 minutes.")
    client_id: str = _value()
    code_verifier: str = Field(pattern=CODE_VERIFIER, description="PKCE: the S256 challenge's secret.")
    redirect_uri: str | SkipJsonSchema[None] = _optional("As in the authorization request.", **_TEXT)
    resource: str | SkipJsonSchema[None] = _optional("<base>/mcp, if sent.", **_TEXT)


class RefreshTokenRequest(_Form):
    grant_type: Literal["refresh_token"]
    refresh_token: str = _value("ort_…: works once.")
    client_id: str = _value()
    scope: str | SkipJsonSchema[None] = _optional("Fewer of the grant's scopes, space-separated.", **_TEXT)
    resource: str | SkipJsonSchema[None] = _optional("<base>/mcp, if sent.", **_TEXT)


class TokenRequest(RootModel[AuthorizationCodeRequest | RefreshTokenRequest]):
    """The form of `POST /oauth/token` (RFC 6749 §4.1.3, §6)."""


class RevocationRequest(_Form):
    """The form of `POST /oauth/revoke` (RFC 7009 §2.1)."""

    token: str = _value("An access or refresh token: its grant ends.", pattern=r"\S")
    client_id: str = _value("The client the token was issued to (another client's token is refused).")
    token_type_hint: str | SkipJsonSchema[None] = _optional("Ignored: either kind is found.", **_TEXT)


class Approval(BaseModel):
    approve: Literal[True]
    mind_id: str = Field(min_length=1, description="One of your minds.")
    scopes: list[OAuthScope] = Field(min_length=1)


class Denial(BaseModel):
    approve: Literal[False]


class ConsentDecision(RootModel[Approval | Denial]):
    """The body of `POST /oauth/requests/{request_id}`: the person's answer."""
