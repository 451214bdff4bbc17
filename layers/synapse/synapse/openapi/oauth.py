"""The OpenAPI operations of OAuth's routes (docs/auth.md "OAuth"), merged into
`synapse.openapi.document.OPERATIONS`: the metadata (RFC 9728, RFC 8414), registration (RFC 7591),
the authorization endpoint's redirects, the token and revocation forms, the consent requests and
the grants. The public endpoints answer OAuth's error body (RFC 6749 §5.2), not the Error envelope,
but for the bounds that are not OAuth's (a body, URI or request line too large, a rate bound: 413,
414, 431, 429), which the Error envelope answers.
"""

from __future__ import annotations

from typing import Any

from synapse.oauth import consent, forms
from synapse.openapi import oauth_models as O
from synapse.openapi.parts import JSON, PAGE, Op, query

FORM = "application/x-www-form-urlencoded"
# OAuth's endpoints answer OAuth's error bodies, but for the bounds that are not OAuth's.
OAUTH: dict[str, Any] = {"error_answer": O.OAuthErrorAnswer, "enveloped": (413, 429), "body_errors": (413,)}
REGISTRATIONS = "Registrations are bounded per address and in total per minute; see Retry-After"
_OAUTH_VALUE = {"type": "string", "minLength": 1, "maxLength": forms.MAX_VALUE_CHARS}
AUTHORIZE = (
    query("response_type", {"type": "string", "enum": ["code"]}, required=True),
    query("client_id", _OAUTH_VALUE, "From POST /oauth/register.", required=True),
    query("redirect_uri", _OAUTH_VALUE, "One the client registered (optional if it registered one)."),
    query("state", {**_OAUTH_VALUE, "maxLength": consent.MAX_STATE_CHARS}, "Sent back as it came."),
    query(
        "code_challenge",
        {"type": "string", "pattern": "^" + consent.S256_CHALLENGE.pattern + "$"},
        "BASE64URL(SHA-256(code_verifier)), without padding.",
        required=True,
    ),
    query("code_challenge_method", {"type": "string", "enum": ["S256"]}, required=True),
    query("scope", _OAUTH_VALUE, "Space-separated: read, write, delete (others ignored; none: all)."),
    query("resource", _OAUTH_VALUE, "<base>/mcp (RFC 8707), if sent."),
)

OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/.well-known/oauth-protected-resource"): Op(
        "protectedResource",
        "OAuth metadata of /mcp (RFC 9728): its resource and authorization server",
        "oauth",
        "public",
        {200: O.ProtectedResourceMetadata},
    ),
    ("GET", "/.well-known/oauth-protected-resource/mcp"): Op(
        "protectedResourceMcp",
        "The same, at the path a 401 from /mcp names (resource_metadata)",
        "oauth",
        "public",
        {200: O.ProtectedResourceMetadata},
    ),
    ("GET", "/.well-known/oauth-authorization-server"): Op(
        "authorizationServer",
        "OAuth authorization server metadata (RFC 8414)",
        "oauth",
        "public",
        {200: O.AuthorizationServerMetadata},
    ),
    ("POST", "/oauth/register"): Op(
        "registerClient",
        "Register a public OAuth client (RFC 7591); unused for 24 h, it expires",
        "oauth",
        "public",
        {201: O.ClientRegistration},
        O.ClientMetadata,
        errors=(429,),
        **OAUTH,
        notes={400: "invalid_redirect_uri or invalid_client_metadata", 429: REGISTRATIONS},
    ),
    ("GET", "/oauth/authorize"): Op(
        "authorize",
        "Start the code flow with PKCE S256: to the consent page (which shows a faulty request's error)",
        "oauth",
        "public",
        {302: None},
        params=AUTHORIZE,
        # Values of up to 4096 characters, percent-encoded, can pass the URI's and the request line's bounds
        errors=(414, 429, 431),
        **{**OAUTH, "enveloped": (413, 414, 429, 431)},
        notes={
            400: "An unknown client, or a redirect_uri it did not register or that registration would"
            " refuse (never redirected to)",
            429: "Authorization requests from this address are bounded per minute; see Retry-After",
        },
    ),
    ("POST", "/oauth/token"): Op(
        "token",
        "A code and its PKCE verifier, or a refresh token, for new tokens (each works once)",
        "oauth",
        "public",
        {200: O.TokenAnswer},
        O.TokenRequest,
        errors=(401,),
        **OAUTH,
        media=FORM,
        notes={
            400: "invalid_request, invalid_grant (a code or refresh token not valid, expired or used:"
            " a reused one revokes its grant), unsupported_grant_type or invalid_target",
            401: "invalid_client: client_id is not a registered client (or a malformed HTTP Basic)",
        },
    ),
    ("POST", "/oauth/revoke"): Op(
        "revokeToken",
        "An app revokes its grant by one of its own tokens (RFC 7009); 200 for an unknown token",
        "oauth",
        "public",
        {200: JSON},
        O.RevocationRequest,
        errors=(401,),
        **OAUTH,
        media=FORM,
        notes={
            400: "invalid_request: no token or no client_id; invalid_grant: the token was issued to"
            " another client (it is not revoked)",
            401: "invalid_client: client_id is not a registered client (or a malformed HTTP Basic)",
        },
    ),
    ("GET", "/oauth/requests/{request_id}"): Op(
        "getAuthorizationRequest",
        "What the consent page shows: which app asks, for which scopes",
        "oauth",
        "user",
        {200: O.OAuthRequestView},
        notes={404: "No such authorization request: unknown, expired or already answered"},
    ),
    ("POST", "/oauth/requests/{request_id}"): Op(
        "decideAuthorizationRequest",
        "Approve (a mind of yours, scopes) or deny the app: where the browser goes next",
        "oauth",
        "user",
        {200: O.ConsentAnswer},
        O.ConsentDecision,
        notes={404: "No such authorization request (or answered, expired), or no such mind of yours"},
    ),
    ("GET", "/minds/{mind_id}/grants"): Op(
        "listGrants",
        "The apps connected to the mind through OAuth, newest first",
        "oauth",
        "user",
        {200: O.GrantPage},
        params=PAGE,
    ),
    ("DELETE", "/minds/{mind_id}/grants/{grant_id}"): Op(
        "revokeGrant", "Disconnect an app: its tokens stop working at once", "oauth", "user", {204: None}
    ),
}
