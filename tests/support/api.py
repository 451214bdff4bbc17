"""Builders for credentials and requests, and a client over the in-process gateway."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import jwt

from infra.gateway import Gateway, HttpResponse

TEST_JWT_SECRET = "test-jwt-secret-0123456789abcdef0123456789"


def jwt_for(sub: str = "user-1", ttl: int = 3600, secret: str = TEST_JWT_SECRET, **claims: Any) -> str:
    now = int(time.time())
    return jwt.encode({"sub": sub, "iat": now, "exp": now + ttl, **claims}, secret, algorithm="HS256")


def memory_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"category": "fact", "key": "home_city", "content": "Lives in Berlin"}
    body.update(overrides)
    return body


@dataclass
class MindHandle:
    """A mind created through the API, with its owner's JWT and its first Mind Key."""

    id: str
    jwt: str
    key: str
    key_id: str


_gateway: Gateway | None = None


def gateway() -> Gateway:
    global _gateway
    if _gateway is None:
        _gateway = Gateway()
    return _gateway


class Api:
    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json_body: Any = None,
        raw_body: bytes | None = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | list[tuple[str, Any]] | None = None,
    ) -> HttpResponse:
        sent = {k.lower(): v for k, v in (headers or {}).items()}
        if token is not None:
            sent.setdefault("authorization", f"Bearer {token}")
        body = raw_body if raw_body is not None else b""
        if json_body is not None:
            body = json.dumps(json_body).encode()
            sent.setdefault("content-type", "application/json")
        return gateway().handle(method, path, urlencode(query or {}, doseq=True), sent, body)

    def create_mind(self, user: str = "user-1", name: str = "Michael's Mind") -> MindHandle:
        token = jwt_for(user)
        answer = self.call("POST", "/minds", token=token, json_body={"name": name})
        assert answer.status == 201, answer.text
        data = answer.json()
        return MindHandle(data["mind"]["id"], token, data["mind_key"]["key"], data["mind_key"]["id"])

    def store(self, mind: MindHandle, *, as_agent: bool = False, **fields: Any) -> HttpResponse:
        token = mind.key if as_agent else mind.jwt
        return self.call(
            "POST",
            "/memory",
            token=token,
            json_body=memory_body(**fields),
            headers={"X-Mind-Id": mind.id} if not as_agent else None,
        )
