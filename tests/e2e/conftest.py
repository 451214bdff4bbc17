"""e2e fixtures: the local runner as a real process on loopback, and a small HTTP client for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.api import MindHandle
from tests.support.runner import RunningService


class Http:
    """requests against the runner; `token` becomes `Authorization: Bearer …`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, Any] | None = None,
        data: bytes | Iterator[bytes] | None = None,
    ) -> requests.Response:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return self.session.request(
            method, self.url + path, json=json_body, data=data, headers=sent, params=params, timeout=30
        )

    def create_mind(self, jwt: str, name: str = "My Mind") -> MindHandle:
        answer = self.call("POST", "/minds", token=jwt, json_body={"name": name})
        assert answer.status_code == 201, answer.text
        body = answer.json()
        return MindHandle(body["mind"]["id"], jwt, body["mind_key"]["key"], body["mind_key"]["id"])


@pytest.fixture(scope="session")
def runner(shared_runner: RunningService) -> RunningService:
    """The process's shared runner (tests/conftest.py); nothing any e2e test sends may produce a 500."""
    return shared_runner


@pytest.fixture
def http(runner: RunningService) -> Http:
    return Http(runner.url)


@pytest.fixture
def mind(http: Http, runner: RunningService) -> MindHandle:
    """A new mind of `local-user`, created with the JWT the runner printed."""
    return http.create_mind(runner.jwt)
