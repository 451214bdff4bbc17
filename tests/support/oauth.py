"""Builders for the OAuth flow against the in-process gateway: a registered client, an
authorization request, the person's consent, the token exchange."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any, NamedTuple
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.api import Api, MindHandle

REDIRECT = "http://127.0.0.1:9/callback"
BASE = "http://127.0.0.1"
RESOURCE = f"{BASE}/mcp"
FORM = {"content-type": "application/x-www-form-urlencoded"}


class Pkce(NamedTuple):
    verifier: str
    challenge: str


def pkce() -> Pkce:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return Pkce(verifier, base64.urlsafe_b64encode(digest).decode().rstrip("="))


def query_of(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


class Flow:
    """One client's way through the flow, step by step, so a test can stop at any step."""

    def __init__(self, api: Api, redirect_uri: str = REDIRECT) -> None:
        self.api = api
        self.redirect_uri = redirect_uri
        self.pkce = pkce()
        answer = api.call(
            "POST", "/oauth/register", json_body={"client_name": "Claude", "redirect_uris": [redirect_uri]}
        )
        assert answer.status == 201, answer.text
        self.client_id: str = answer.json()["client_id"]

    def authorize(self, **overrides: Any) -> Any:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "state": "s-123",
            "code_challenge": self.pkce.challenge,
            "code_challenge_method": "S256",
            "scope": "read write delete",
            "resource": RESOURCE,
            **overrides,
        }
        return self.api.call(
            "GET", "/oauth/authorize", query={k: v for k, v in params.items() if v is not None}
        )

    def request_id(self, **overrides: Any) -> str:
        answer = self.authorize(**overrides)
        assert answer.status == 302, answer.text
        return str(answer.headers["Location"]).rsplit("/", 1)[1]

    def decide(self, mind: MindHandle, request_id: str, **body: Any) -> Any:
        payload = {"approve": True, "mind_id": mind.id, "scopes": ["read", "write"], **body}
        return self.api.call("POST", f"/oauth/requests/{request_id}", token=mind.jwt, json_body=payload)

    def code(self, mind: MindHandle, **body: Any) -> str:
        answer = self.decide(mind, self.request_id(), **body)
        assert answer.status == 200, answer.text
        return query_of(answer.json()["redirect_to"])["code"]

    def token(self, **fields: str) -> Any:
        return self.api.call("POST", "/oauth/token", raw_body=urlencode(fields).encode(), headers=FORM)

    def exchange(self, code: str, **overrides: str) -> Any:
        fields = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "client_id": self.client_id,
            "code_verifier": self.pkce.verifier,
            "resource": RESOURCE,
            **overrides,
        }
        return self.token(**{k: v for k, v in fields.items() if v})

    def tokens(self, mind: MindHandle, **body: Any) -> dict[str, Any]:
        answer = self.exchange(self.code(mind, **body))
        assert answer.status == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    def refresh(self, refresh_token: str) -> Any:
        return self.token(grant_type="refresh_token", refresh_token=refresh_token, client_id=self.client_id)


def mcp(api: Api, token: str, method: str = "tools/list", params: dict[str, Any] | None = None) -> Any:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return api.call(
        "POST",
        "/mcp",
        token=token,
        json_body=message,
        headers={"Accept": "application/json, text/event-stream"},
    )
