"""A real HTTP receiver on 127.0.0.1 for webhook tests: records every request, answers with the
statuses a test scripts per path (200 once the script runs out), and can hold a path's requests
until released (a receiver that never answers in time).

Use it with `from tests.support.receiver import receiver_fixture as receiver_fixture`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.statuses: dict[str, list[int]] = {}
        self.holds: dict[str, threading.Event] = {}
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.receiver = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def answer(self, path: str, *statuses: int) -> None:
        """Answer the next requests to `path` with these statuses, in order."""
        self.statuses[path] = list(statuses)

    def hold(self, path: str) -> threading.Event:
        """Requests to `path` wait until the returned event is set."""
        self.holds[path] = threading.Event()
        return self.holds[path]

    def got(self, path: str) -> list[Received]:
        with self.changed:
            return [r for r in self.received if r.path == path]

    def wait_for(self, path: str, count: int, timeout: float = 10.0) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.got_unlocked(path)) >= count, timeout)

    def got_unlocked(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    def _arrived(self, request: Received) -> int:
        with self.changed:
            self.received.append(request)
            self.changed.notify_all()
        hold = self.holds.get(request.path)
        if hold is not None:
            hold.wait(30)
        script = self.statuses.get(request.path)
        return script.pop(0) if script else 200

    def stop(self) -> None:
        for hold in self.holds.values():
            hold.set()
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        receiver: Receiver = self.server.receiver  # type: ignore[attr-defined]
        status = receiver._arrived(Received(self.path, headers, body))
        try:
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        except OSError:
            pass  # the sender gave up waiting

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(name="receiver")
def receiver_fixture() -> Iterator[Receiver]:
    receiver = Receiver()
    receiver.thread.start()
    yield receiver
    receiver.stop()
