"""A connector's way in, end to end against `make run`, driven by the official `mcp` SDK's own OAuth
client provider: discovery from /mcp's 401, dynamic registration, authorization with the consent
given as the dev user (what the console's consent page sends), the token exchange with PKCE, tool
calls, a refresh, then the person revokes the app and its next call is refused."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.clients.conftest import MindClients
from tests.support.oauth import query_of
from tests.support.runner import RunningService

CALLBACK = "http://127.0.0.1:9/callback"


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class DevUserConsent:
    """The browser half of the flow: follow /oauth/authorize to the console's consent view, and
    answer it as the signed-in dev user would, with the chosen mind and scopes."""

    def __init__(self, runner: RunningService, mind_id: str, scopes: list[str]) -> None:
        self.runner, self.mind_id, self.scopes = runner, mind_id, scopes
        self.redirected_to: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as browser:
            started = await browser.get(authorization_url)
            assert started.status_code == 302, started.text
            consent = started.headers["location"]
            assert consent.startswith(f"{self.runner.url}/console#/connect/oar_")
            request_id = consent.rsplit("/", 1)[1]
            person = {"Authorization": f"Bearer {self.runner.jwt}"}
            shown = await browser.get(f"{self.runner.url}/oauth/requests/{request_id}", headers=person)
            assert shown.json()["client"]["name"] == "SDK connector"
            body = {"approve": True, "mind_id": self.mind_id, "scopes": self.scopes}
            decided = await browser.post(
                f"{self.runner.url}/oauth/requests/{request_id}", json=body, headers=person
            )
            assert decided.status_code == 200, decided.text
            self.redirected_to.append(decided.json()["redirect_to"])

    async def callback(self) -> AuthorizationCodeResult:
        sent = query_of(self.redirected_to[-1])
        return AuthorizationCodeResult(code=sent["code"], state=sent.get("state"))


def tokens_of(provider: OAuthClientProvider) -> OAuthToken:
    assert provider.context.current_tokens is not None
    return provider.context.current_tokens


def mcp_status(runner: RunningService, token: str) -> int:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return httpx.post(f"{runner.url}/mcp", json=ping, headers=headers).status_code


def provider_for(runner: RunningService, consent: DevUserConsent) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="SDK connector",
        redirect_uris=[CALLBACK],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        f"{runner.url}/mcp", metadata, MemoryStorage(), consent.redirect, consent.callback
    )


def test_a_connector_signs_in_with_oauth_calls_tools_refreshes_and_is_cut_off_when_revoked(
    runner: RunningService, mind: MindClients
) -> None:
    consent = DevUserConsent(runner, mind.id, ["read", "write"])
    provider = provider_for(runner, consent)

    async def scenario() -> None:
        client = httpx2.AsyncClient(auth=provider, timeout=60)
        transport = streamable_http_client(f"{runner.url}/mcp", http_client=client)
        async with client, transport as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "remember" in names and "forget" not in names  # read and write, no delete
            assert not (await session.call_tool("remember", {"content": "Drinks oat flat whites"})).is_error
            assert len(consent.redirected_to) == 1
            first = tokens_of(provider).access_token
            # The access token runs out: the SDK refreshes it, with no new consent
            provider.context.token_expiry_time = time.time() - 1
            assert "oat flat" in str((await session.call_tool("recall", {})).content[0])
            revoked = tokens_of(provider).access_token
            assert revoked != first and len(consent.redirected_to) == 1
            assert mcp_status(runner, first) == 401
            # The person disconnects the app: its token is refused at once, the SDK must ask again
            person = {"Authorization": f"Bearer {runner.jwt}"}
            grants = httpx.get(f"{runner.url}/minds/{mind.id}/grants", headers=person).json()["grants"]
            assert [g["client_name"] for g in grants] == ["SDK connector"]
            gone = httpx.delete(f"{runner.url}/minds/{mind.id}/grants/{grants[0]['id']}", headers=person)
            assert gone.status_code == 204
            assert mcp_status(runner, revoked) == 401
            assert not (await session.call_tool("recall", {})).is_error
            assert len(consent.redirected_to) == 2  # a new consent, a new grant

    anyio.run(scenario)
    memories = mind.agent.list_memories().items
    assert [(m.content, m.source) for m in memories] == [("Drinks oat flat whites", "agent")]


def test_the_oauth_endpoints_refuse_without_a_500(runner: RunningService) -> None:
    url = runner.url
    registered = httpx.post(f"{url}/oauth/register", json={"redirect_uris": [CALLBACK]})
    assert registered.status_code == 201
    client_id = registered.json()["client_id"]
    base: dict[str, Any] = {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK}
    # A faulty request goes to the consent page (the person decides), not to the client's address
    plain = httpx.get(f"{url}/oauth/authorize", params={**base, "code_challenge": "a" * 43})
    assert plain.status_code == 302 and plain.headers["location"].startswith(f"{url}/console#/connect/oar_")
    # A redirect URI not registered, or one a browser reads as another host, is never redirected to
    for uri in ("https://evil.example/cb", "http://127.0.0.2:9999\\@127.0.0.1:9/callback", CALLBACK + "\r\n"):
        stranger = httpx.get(f"{url}/oauth/authorize", params={**base, "redirect_uri": uri})
        assert stranger.status_code == 400 and "location" not in stranger.headers, uri
    crlf = httpx.post(f"{url}/oauth/register", json={"redirect_uris": [CALLBACK + "\r\nSet-Cookie: a=b"]})
    assert crlf.status_code == 400 and crlf.json()["error"] == "invalid_redirect_uri"
    for fields in ({"grant_type": "authorization_code", "code": "oac_x", "client_id": client_id}, {"x": "y"}):
        answer = httpx.post(f"{url}/oauth/token", data=fields)
        assert answer.status_code == 400 and "error" in answer.json()
    revoked = httpx.post(f"{url}/oauth/revoke", data={"token": "ort_unknown", "client_id": client_id})
    assert revoked.status_code == 200
    assert httpx.post(f"{url}/oauth/revoke", data={"token": "ort_unknown"}).status_code == 400
    assert runner.server_errors() == []
