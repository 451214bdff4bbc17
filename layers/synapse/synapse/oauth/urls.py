"""Where this deployment is, as OAuth names it: the issuer (`<base>`), the protected resource
(`<base>/mcp`) and the two metadata documents (RFC 8414, RFC 9728).

`<base>` comes from the request, not from configuration: API Gateway's `domainName` (the custom
domain when there is one) over https, or, under `make run`, the loopback `Host` over http. A
stack's functions cannot be told their own URL by the template without a dependency cycle, and the
Host a client can reach is exactly what it must see in the metadata."""

from __future__ import annotations

from typing import Any

from synapse.minds.keys import SCOPES

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
MCP_PATH = "/mcp"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
CONSENT_PATH = "/console#/connect/"


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def base_url(event: dict[str, Any]) -> str:
    """`scheme://host[:port]` of the request: what a client used to reach this deployment."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    host = str((event.get("requestContext") or {}).get("domainName") or headers.get("host") or "")
    loopback = _host_name(host) in LOOPBACK_NAMES
    forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    scheme = forwarded if forwarded in {"http", "https"} else ("http" if loopback else "https")
    return f"{scheme}://{host.strip().lower()}"


def resource(base: str) -> str:
    """The protected resource an access token is bound to (RFC 8707): the MCP endpoint."""
    return base + MCP_PATH


def resource_metadata_url(base: str) -> str:
    return base + PROTECTED_RESOURCE_PATH + MCP_PATH


def protected_resource(base: str) -> dict[str, Any]:
    """RFC 9728 metadata of `/mcp`."""
    return {
        "resource": resource(base),
        "authorization_servers": [base],
        "scopes_supported": list(SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Synapse",
        "resource_documentation": base + "/openapi.json",
    }


def authorization_server(base: str) -> dict[str, Any]:
    """RFC 8414 metadata: public clients (no secret), the code flow with PKCE S256 only."""
    return {
        "issuer": base,
        "authorization_endpoint": base + "/oauth/authorize",
        "token_endpoint": base + "/oauth/token",
        "registration_endpoint": base + "/oauth/register",
        "revocation_endpoint": base + "/oauth/revoke",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "service_documentation": base + "/openapi.json",
    }


def consent_page(base: str, request_id: str) -> str:
    """Where /oauth/authorize sends the browser: the review console's consent view."""
    return base + CONSENT_PATH + request_id
