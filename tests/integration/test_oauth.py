"""OAuth 2.1 for /mcp (issue 22): discovery, registration, consent, the code with PKCE, rotating
refresh tokens, revocation; and the attacks: plain PKCE, a reused code or refresh token, a foreign
redirect URI, another resource, another mind, an expired token. None answers 500."""

from __future__ import annotations

import base64
import re
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from synapse.core import clock
from synapse.oauth import clients, consent
from synapse.openapi.oauth_models import REDIRECT_URI

from tests.support.api import Api, MindHandle
from tests.support.clock import frozen_clock_fixture as frozen_clock_fixture
from tests.support.clock import ticking_clock_fixture as ticking_clock_fixture
from tests.support.oauth import BASE, RESOURCE, Flow, mcp, query_of


@pytest.fixture
def mind(api: Api, ticking_clock: None) -> MindHandle:
    return api.create_mind("alice")


@pytest.fixture
def flow(api: Api) -> Flow:
    return Flow(api)


def tools(api: Api, token: str) -> list[str]:
    answer = mcp(api, token)
    assert answer.status == 200, answer.text
    return [tool["name"] for tool in answer.json()["result"]["tools"]]


def test_metadata_points_a_client_from_the_401_to_the_authorization_server(api: Api) -> None:
    # Given no credential, When /mcp is called
    refused = mcp(api, "")
    challenge = refused.headers["WWW-Authenticate"]
    # Then the 401 names the resource metadata, which names the authorization server
    assert (
        refused.status == 401
        and f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"' in challenge
    )
    resource = api.call("GET", "/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == RESOURCE and resource["authorization_servers"] == [BASE]
    assert api.call("GET", "/.well-known/oauth-protected-resource").json() == resource
    server = api.call("GET", "/.well-known/oauth-authorization-server").json()
    assert server["issuer"] == BASE and server["code_challenge_methods_supported"] == ["S256"]
    assert server["token_endpoint"] == f"{BASE}/oauth/token"


def test_a_consented_grant_acts_as_an_agent_on_one_mind_with_its_scopes(
    api: Api, flow: Flow, mind: MindHandle
) -> None:
    # Given a grant of read and write
    tokens = flow.tokens(mind, scopes=["read", "write"])
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "read write"
    # When the app lists and calls tools
    listed = tools(api, tokens["access_token"])
    stored = mcp(
        api, tokens["access_token"], "tools/call", {"name": "remember", "arguments": {"content": "Likes tea"}}
    )
    # Then it has no delete tool, and what it writes is an agent's, marked with the grant
    assert "remember" in listed and "forget" not in listed
    memory = api.call("GET", "/memory", token=mind.key).json()["memories"][0]
    assert memory["source"] == "agent" and not memory["verified"] and not stored.json()["result"]["isError"]
    history = api.call("GET", f"/memory/{memory['id']}/history", token=mind.key).json()
    assert history["revisions"][0]["changed_by"]["grant_id"].startswith("grant_")


def test_the_access_token_is_for_mcp_only(api: Api, flow: Flow, mind: MindHandle) -> None:
    token = flow.tokens(mind)["access_token"]
    answer = api.call("GET", "/memory", token=token)
    assert answer.status == 401 and "/mcp only" in answer.json()["error"]["message"]


def test_refresh_rotates_both_tokens_and_a_reused_refresh_token_revokes_the_grant(
    api: Api, flow: Flow, mind: MindHandle
) -> None:
    # Given a grant, refreshed once
    first = flow.tokens(mind)
    second = flow.refresh(first["refresh_token"])
    assert second.status == 200, second.text
    renewed = second.json()
    # Then the old access token is gone and the new one works
    assert mcp(api, first["access_token"]).status == 401
    assert tools(api, renewed["access_token"])
    # When the first refresh token is presented again
    replay = flow.refresh(first["refresh_token"])
    # Then it is refused and the whole grant is revoked, in the audit too
    assert replay.status == 400 and replay.json()["error"] == "invalid_grant"
    assert mcp(api, renewed["access_token"]).status == 401
    assert flow.refresh(renewed["refresh_token"]).status == 400
    events = api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt).json()["events"]
    assert [e["action"] for e in events][:2] == ["grant.revoked", "grant.created"]
    assert events[0]["target"]["reason"] == "refresh_token_reused"


def test_the_person_sees_and_revokes_a_connected_app(api: Api, flow: Flow, mind: MindHandle) -> None:
    token = flow.tokens(mind)["access_token"]
    tools(api, token)
    listed = api.call("GET", f"/minds/{mind.id}/grants", token=mind.jwt).json()["grants"]
    assert [(g["client_name"], g["redirect_host"]) for g in listed] == [("Claude", "127.0.0.1:9")]
    assert listed[0]["last_used_at"] is not None
    # When the person revokes it
    assert api.call("DELETE", f"/minds/{mind.id}/grants/{listed[0]['id']}", token=mind.jwt).status == 204
    # Then its next call is refused at once
    refused = mcp(api, token)
    assert refused.status == 401 and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    assert api.call("DELETE", f"/minds/{mind.id}/grants/{listed[0]['id']}", token=mind.jwt).status == 404


def test_a_mind_key_and_another_user_cannot_manage_grants(api: Api, flow: Flow, mind: MindHandle) -> None:
    other = api.create_mind("mallory")
    assert api.call("GET", f"/minds/{mind.id}/grants", token=mind.key).status == 403
    assert api.call("GET", f"/minds/{mind.id}/grants", token=other.jwt).status == 404
    # And a person cannot grant another's mind
    assert flow.decide(other, flow.request_id(), mind_id=mind.id).status == 404


def test_a_code_works_once_and_its_reuse_revokes_what_it_gave(api: Api, flow: Flow, mind: MindHandle) -> None:
    code = flow.code(mind)
    first = flow.exchange(code)
    again = flow.exchange(code)
    assert first.status == 200 and again.status == 400 and again.json()["error"] == "invalid_grant"
    assert mcp(api, first.json()["access_token"]).status == 401


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),
        ({"code_challenge": None}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
    ],
)
def test_a_bad_authorization_request_goes_to_the_person_not_to_the_client(
    api: Api, flow: Flow, mind: MindHandle, overrides: dict[str, Any], error: str
) -> None:
    # When a registered client sends a request that is wrong (RFC 9700 §4.11.2: not auto-redirected)
    answer = flow.authorize(**overrides)
    # Then the browser goes to the consent page, which shows the signed-in person the error
    assert answer.status == 302 and answer.headers["Location"].startswith(f"{BASE}/console#/connect/")
    request_id = answer.headers["Location"].rsplit("/", 1)[1]
    shown = api.call("GET", f"/oauth/requests/{request_id}", token=mind.jwt).json()
    assert shown["error"]["error"] == error
    # And denying it sends the error back to the client, with its state
    sent = query_of(flow.decide(mind, request_id, approve=False).json()["redirect_to"])
    assert sent["error"] == error and sent["state"] == "s-123"


def test_an_unregistered_redirect_uri_or_client_is_never_redirected_to(flow: Flow) -> None:
    for overrides in ({"redirect_uri": "https://attacker.example/cb"}, {"client_id": "oc_nobody"}):
        answer = flow.authorize(**overrides)
        assert answer.status == 400 and "Location" not in answer.headers


def test_a_loopback_redirect_uri_may_use_another_port(flow: Flow) -> None:
    assert flow.authorize(redirect_uri="http://127.0.0.1:45678/callback").status == 302


def test_the_token_endpoint_refuses_a_wrong_verifier_resource_or_redirect(
    flow: Flow, mind: MindHandle
) -> None:
    for overrides, error in (
        ({"code_verifier": "x" * 43}, "invalid_grant"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ({"redirect_uri": "http://127.0.0.1:9/other"}, "invalid_grant"),
        ({"client_id": "oc_nobody"}, "invalid_client"),
    ):
        answer = flow.exchange(flow.code(mind), **overrides)
        assert answer.json()["error"] == error, (overrides, answer.text)
        assert answer.headers.get("Cache-Control") == "no-store"
    assert flow.token(grant_type="password").json()["error"] == "unsupported_grant_type"


def test_a_token_bound_to_another_host_is_refused(api: Api, flow: Flow, mind: MindHandle) -> None:
    token = flow.tokens(mind)["access_token"]
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answer = api.call("POST", "/mcp", token=token, json_body=message, headers={"Host": "localhost"})
    assert answer.status == 401 and "another resource" in answer.json()["error"]["message"]


def test_an_expired_access_token_is_refused(api: Api, flow: Flow, mind: MindHandle, monkeypatch: Any) -> None:
    token = flow.tokens(mind)["access_token"]
    later = clock.now() + timedelta(hours=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    answer = mcp(api, token)
    assert answer.status == 401 and "expired" in answer.json()["error"]["message"]


def test_deny_sends_access_denied_and_a_request_is_decided_once(flow: Flow, mind: MindHandle) -> None:
    request_id = flow.request_id()
    denied = flow.decide(mind, request_id, approve=False)
    assert query_of(denied.json()["redirect_to"])["error"] == "access_denied"
    assert flow.decide(mind, request_id).status == 404


def test_consent_needs_scopes_from_the_list(flow: Flow, mind: MindHandle) -> None:
    for scopes in ([], ["admin"], "read"):
        answer = flow.decide(mind, flow.request_id(), scopes=scopes)
        assert answer.status == 422 and "scopes" in answer.text


@pytest.mark.parametrize(
    "body",
    [
        {"redirect_uris": ["http://attacker.example/cb"]},
        {"redirect_uris": ["https://ok.example/cb#frag"]},
        {"redirect_uris": []},
        {"redirect_uris": ["https://ok.example/cb"], "grant_types": ["client_credentials"]},
        {"redirect_uris": ["https://ok.example/cb"], "client_name": "x" * 101},
    ],
)
def test_registration_refuses_bad_metadata(api: Api, body: dict[str, Any]) -> None:
    answer = api.call("POST", "/oauth/register", json_body=body)
    assert answer.status == 400 and answer.json()["error"] in {
        "invalid_redirect_uri",
        "invalid_client_metadata",
    }


def test_registrations_from_one_caller_are_bounded(api: Api, frozen_clock: None) -> None:
    # (one instant: a minute boundary between the calls would start a new window)
    body = {"redirect_uris": ["https://ok.example/cb"]}
    statuses = [api.call("POST", "/oauth/register", json_body=body).status for _ in range(12)]
    assert statuses.count(201) == 10 and statuses[-1] == 429


def test_deleting_the_mind_removes_its_grants(api: Api, flow: Flow, mind: MindHandle) -> None:
    token = flow.tokens(mind)["access_token"]
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    assert mcp(api, token).status == 401


def test_registrations_from_all_callers_are_bounded_too(
    api: Api, monkeypatch: Any, frozen_clock: None
) -> None:
    monkeypatch.setattr(clients, "PER_CALLER_PER_MINUTE", 100)
    monkeypatch.setattr(clients, "TOTAL_PER_MINUTE", 3)
    body = {"redirect_uris": ["https://ok.example/cb"]}
    statuses = [api.call("POST", "/oauth/register", json_body=body).status for _ in range(4)]
    assert statuses == [201, 201, 201, 429]


def test_a_grant_cannot_reach_another_mind(api: Api, flow: Flow, mind: MindHandle) -> None:
    token = flow.tokens(mind)["access_token"]
    other = api.create_mind("alice", name="Another mind")
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {}},
    }
    answer = api.call("POST", "/mcp", token=token, json_body=message, headers={"X-Mind-Id": other.id})
    result = answer.json()
    assert "error" in result or result["result"]["isError"], answer.text


def test_a_client_sending_its_id_by_http_basic_is_understood(flow: Flow, mind: MindHandle) -> None:
    code = flow.code(mind)
    fields = {"grant_type": "authorization_code", "code": code, "code_verifier": flow.pkce.verifier}
    basic = base64.b64encode(f"{flow.client_id}:unused-secret".encode()).decode()
    headers = {"content-type": "application/x-www-form-urlencoded", "authorization": f"Basic {basic}"}
    answer = flow.api.call("POST", "/oauth/token", raw_body=urlencode(fields).encode(), headers=headers)
    assert answer.status == 200, answer.text


@pytest.mark.parametrize("uri", ["https://a b.example/cb", "https://[::1]x/cb", "https://:80/cb"])
def test_a_redirect_uri_needs_a_real_host(api: Api, uri: str) -> None:
    answer = api.call("POST", "/oauth/register", json_body={"redirect_uris": [uri]})
    assert answer.status == 400 and answer.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "uri", ["https://hKs..-h:65130/A\u00c0", "https://b?", "https://g", "https://-:0/x", "http://127.0.0.1?L"]
)
def test_a_redirect_uri_the_openapi_document_allows_is_accepted(api: Api, uri: str) -> None:
    assert re.fullmatch(REDIRECT_URI, uri)
    answer = api.call("POST", "/oauth/register", json_body={"redirect_uris": [uri]})
    assert answer.status == 201, answer.text


def test_authorization_requests_from_one_caller_are_bounded(
    flow: Flow, monkeypatch: Any, frozen_clock: None
) -> None:
    monkeypatch.setattr(consent, "REQUESTS_PER_CALLER_PER_MINUTE", 2)
    assert [flow.authorize().status for _ in range(3)] == [302, 302, 429]


def test_a_code_expires_after_five_minutes(flow: Flow, mind: MindHandle, monkeypatch: Any) -> None:
    code = flow.code(mind)
    later = clock.now() + timedelta(minutes=6)
    monkeypatch.setattr(clock, "now", lambda: later)
    answer = flow.exchange(code)
    assert answer.status == 400 and answer.json()["error"] == "invalid_grant"


def test_the_app_revokes_itself_with_its_refresh_token(api: Api, flow: Flow, mind: MindHandle) -> None:
    tokens = flow.tokens(mind)
    form = urlencode({"token": tokens["refresh_token"], "client_id": flow.client_id}).encode()
    answer = api.call(
        "POST", "/oauth/revoke", raw_body=form, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert answer.status == 200
    assert mcp(api, tokens["access_token"]).status == 401
    events = api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt).json()["events"]
    assert events[0]["action"] == "grant.revoked" and events[0]["target"]["reason"] == "client"
