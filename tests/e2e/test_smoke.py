"""`make smoke` (infra/smoke.py) against the local runner, so the deploy check cannot rot: the same
requests it sends to a deployed stack pass here, and a failing step is reported and still cleans up."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

from infra import smoke
from tests.e2e.conftest import Http
from tests.support.runner import ROOT, RunningService


def _minds(http: Http, jwt: str) -> set[str]:
    answer = http.call("GET", "/minds", token=jwt)
    assert answer.status_code == 200, answer.text
    return {mind["id"] for mind in answer.json()["minds"]}


def test_make_smoke_passes_against_the_runner_and_leaves_no_mind(runner: RunningService, http: Http) -> None:
    # Given the runner and the JWT it printed, and the minds that user has now
    before = _minds(http, runner.jwt)
    # When the smoke command runs as `make smoke` runs it (the token in the environment)
    env = {**os.environ, "TOKEN": runner.jwt}
    done = subprocess.run(  # noqa: S603 - our interpreter, our module, the runner's loopback URL
        [sys.executable, "-m", "infra.smoke", runner.url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then every step passed, one line each
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("ok")]
    assert steps == ["create", "store", "recall", "search", "delete"], done.stdout
    assert done.stdout.splitlines()[-1].startswith("PASS")
    # And the mind it made is gone again
    assert _minds(http, runner.jwt) == before


def test_a_missing_token_or_url_is_a_usage_error() -> None:
    out = io.StringIO()
    assert smoke.main(["not-a-url"], out=out) == 2
    assert "usage" in out.getvalue()


class _StoreFails:
    """A fake API: minds are created and deleted, storing a memory answers 500."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, request: urllib.request.Request, timeout: float) -> Any:
        self.calls.append(f"{request.get_method()} {request.full_url}")
        if request.get_method() == "POST" and request.full_url.endswith("/minds"):
            body = {"mind": {"id": "m_smoke"}, "mind_key": {"key": "mk_smoke"}}
            return _Response(201, json.dumps(body).encode())
        if request.get_method() == "DELETE":
            return _Response(204, b"")
        raise urllib.error.HTTPError(request.full_url, 500, "boom", {}, io.BytesIO(b'{"error": {}}'))  # type: ignore[arg-type]


class _Response(io.BytesIO):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(body)
        self.status = status


def test_a_failing_step_exits_1_and_still_deletes_the_mind(monkeypatch: Any) -> None:
    # Given an API whose store step fails
    api = _StoreFails()
    monkeypatch.setenv("TOKEN", "a.jwt.token")
    out = io.StringIO()
    # When the smoke command runs against it
    code = smoke.main(["https://synapse.example.com"], out=out, opener=api)
    # Then it reports the failed step, exits 1, and the mind it created was deleted anyway
    assert code == 1
    assert "FAIL  store memory: expected 201, got 500" in out.getvalue()
    assert api.calls[-1] == "DELETE https://synapse.example.com/minds/m_smoke"
