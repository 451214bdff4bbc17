"""Raw HTTP/1.1 over a socket, for requests no well-behaved client would send (malformed framing,
stalled bodies, raw UTF-8 in the request line). Every read has a socket timeout, so a server that
never answers fails the test instead of hanging it."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

ANSWER_WITHIN_SECONDS = 5.0


@dataclass(frozen=True)
class RawAnswer:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def address_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname and parts.port
    return parts.hostname, parts.port


def exchange(
    address: tuple[str, int], request: bytes, timeout: float = ANSWER_WITHIN_SECONDS, head: bool = False
) -> RawAnswer:
    """Send `request` as it is, then read one answer (Content-Length framed). Raises TimeoutError
    when the server sends nothing for `timeout` seconds."""
    with socket.create_connection(address, timeout=timeout) as connection:
        connection.sendall(request)
        return read_answer(connection, head)


def read_answer(connection: socket.socket, head: bool = False) -> RawAnswer:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a full answer: {received[:200]!r}")
        received += chunk
    header_block, _, rest = received.partition(b"\r\n\r\n")
    status_line, *lines = header_block.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = 0 if head else int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        rest += chunk
    return RawAnswer(int(status_line.split(" ")[1]), headers, rest[:length])


def assert_error_envelope(answer: RawAnswer, status: int, code: str | None = None) -> dict[str, Any]:
    """SPEC's error body: {"error": {"code", "message", "details"}, "request_id"}; returns the error."""
    assert answer.status == status, (answer.status, answer.body[:300])
    assert answer.headers["content-type"].startswith("application/json"), answer.headers
    body = answer.json()
    assert set(body) == {"error", "request_id"} and body["request_id"], body
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"} and error["message"], error
    if code is not None:
        assert error["code"] == code, error
    return error
