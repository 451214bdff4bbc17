"""Fixtures of the client tests: a real `make run` (one per test process, shared with the e2e webhook
tests: tests/conftest.py's `loopback_runner`), and a fresh mind per test
with a client for its agent (Mind Key) and for its person (JWT + X-Mind-Id); a recording front that
shows what a subprocess (the CLI, the MCP server) sent."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from synapse_client import Synapse

from tests.support.runner import ROOT, RunningService

SYNAPSE_CLI = Path(sys.executable).parent / "synapse"


@pytest.fixture(scope="session")
def runner(loopback_runner: RunningService) -> RunningService:
    return loopback_runner


@dataclass
class MindClients:
    id: str
    key: str
    agent: Synapse
    person: Synapse


def new_mind(runner: RunningService, name: str = "Client test") -> MindClients:
    with Synapse(runner.url, token=runner.jwt) as owner:
        made = owner.create_mind(name)
    assert made.mind_key.key is not None
    return MindClients(
        made.mind.id,
        made.mind_key.key,
        Synapse(runner.url, mind_key=made.mind_key.key),
        Synapse(runner.url, token=runner.jwt, mind_id=made.mind.id),
    )


@pytest.fixture
def mind(runner: RunningService) -> Iterator[MindClients]:
    clients = new_mind(runner)
    yield clients
    clients.agent.close()
    clients.person.close()


def run_cli(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it (no profile file unless `env` names one)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_")}
    clean.setdefault("SYNAPSE_CONFIG", str(ROOT / ".no-synapse-config.toml"))
    # The dev venv holds no pydantic plugin, only ~170 distributions whose entry points pydantic would
    # read at each start to find one (a twentieth of a second of each run here): nothing to load
    clean.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    return subprocess.run(  # noqa: S603 — our own console script
        [str(SYNAPSE_CLI), *args],
        env=clean | env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@dataclass
class Recorded:
    """What went through a `recording_front`: each request's method and path with its query."""

    url: str
    requests: list[tuple[str, str]] = field(default_factory=list)

    def queries(self, path: str) -> list[dict[str, list[str]]]:
        """The query parameters of each request to `path`, in order."""
        parts = [urlsplit(target) for _, target in self.requests]
        return [parse_qs(part.query) for part in parts if part.path == path]


_HOP_BY_HOP = {"connection", "content-length", "content-encoding", "host", "transfer-encoding"}


@contextlib.contextmanager
def recording_front(target: str) -> Iterator[Recorded]:
    """An HTTP server on a free port that forwards every request to `target` as it came and answers
    with the target's answer, noting each request: what a client in another process sent."""
    recorded = Recorded("")

    class Forward(BaseHTTPRequestHandler):
        def forward(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else None
            recorded.requests.append((self.command, self.path))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            url = target + self.path
            answer = httpx.request(self.command, url, headers=headers, content=body, timeout=60)
            self.send_response(answer.status_code)
            for name, value in answer.headers.multi_items():
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

        def log_message(self, format: str, *args: object) -> None:  # no log lines on stderr
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    recorded.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
