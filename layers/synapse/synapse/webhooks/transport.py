"""One signed POST of an event to a subscriber, and how it went.

The URL is checked again right before each attempt (after DNS, `ssrf`), and the connection is
pinned to the address just approved: Host header and TLS SNI keep the name, so a resolver that
rebinds the name between check and connect gains nothing. No redirect is followed. The timeout
(5 s) bounds the whole attempt, connecting included, not only each read.
"""

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from datetime import datetime
from typing import Any, NamedTuple

from synapse.core.settings import get_settings
from synapse.webhooks import signing, ssrf, subscriptions

TIMEOUT_SECONDS = 5.0
USER_AGENT = "Synapse-Webhooks/1"
_RESPONSE_PEEK_BYTES = 4096


class Outcome(NamedTuple):
    delivered: bool
    status_code: int | None
    error: str | None
    latency_ms: int


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) over a socket already connected to the checked address; Host and SNI keep the name."""

    def __init__(self, target: ssrf.Target, sock: socket.socket, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._pinned = sock
        self._tls = ssl.create_default_context() if target.scheme == "https" else None
        self.default_port = 443 if self._tls else 80

    def connect(self) -> None:
        sock = self._pinned
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        self.sock = sock


def _connect(target: ssrf.Target, deadline: float) -> socket.socket:
    """A socket connected to the first address that takes it before `deadline` (monotonic)."""
    last: OSError | None = None
    for address in target.addresses:  # numeric addresses: no DNS lookup happens here
        left = deadline - time.monotonic()
        if left <= 0:  # many addresses that hang must not add up their timeouts
            raise last or TimeoutError("no address took the connection in time")
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(left)
        try:
            sock.connect((address, target.port))
        except OSError as error:
            sock.close()
            last = error
        else:
            return sock
    raise last or OSError("no address to connect to")


class _Deadline:
    """Shuts a connection's socket down once `seconds` have passed, whatever is blocked on it.

    A socket timeout bounds each read only: a receiver trickling a byte at a time would hold an
    attempt (and its Lambda) for ever. The shutdown goes through a duplicate of the socket's
    descriptor, held until `close`: TLS wraps (and detaches) the original, and a bare descriptor
    number could by then name another connection.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._handle = sock.dup()
        self._lock = threading.Lock()
        self._open = True
        self.expired = False
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if not self._open:
                return
            self.expired = True
            with contextlib.suppress(OSError):  # the receiver may have hung up already
                self._handle.shutdown(socket.SHUT_RDWR)

    def close(self, *closing: socket.socket | http.client.HTTPConnection) -> None:
        with self._lock:
            self._open = False
            self._timer.cancel()
            for thing in (*closing, self._handle):
                thing.close()


def post(target: ssrf.Target, body: bytes, headers: dict[str, str], timeout: float | None = None) -> int:
    """POST `body` to the checked target (no redirects followed); the response status.

    `timeout` (default TIMEOUT_SECONDS, read at call time) bounds the whole attempt, connecting
    included, not only each read (TimeoutError past it).
    """
    timeout = TIMEOUT_SECONDS if timeout is None else timeout
    ends = time.monotonic() + timeout
    sock = _connect(target, ends)
    left = max(0.0, ends - time.monotonic())
    connection = _PinnedConnection(target, sock, left)
    deadline = _Deadline(sock, left)
    late = TimeoutError(f"no complete answer within {timeout:g} s")
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(_RESPONSE_PEEK_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException) as error:
        if deadline.expired:
            raise late from error
        raise
    finally:
        deadline.close(connection, sock)
    if deadline.expired:  # cut short: what was read may be a truncated answer
        raise late
    return status


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError | socket.timeout):
        return f"timeout: no answer within {TIMEOUT_SECONDS:g} s"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ssl.SSLError):
        return f"TLS error: {error.__class__.__name__}"
    return f"{error.__class__.__name__}: {str(error)[:200]}"


def attempt(subscription: subscriptions.Subscription, payload: dict[str, Any], at: datetime) -> Outcome:
    """Check the URL again (after DNS), sign, POST once. Never raises for the receiver's faults."""
    started = time.monotonic()

    def outcome(status: int | None, error: str | None) -> Outcome:
        delivered = status is not None and 200 <= status < 300
        return Outcome(delivered, status, error, int((time.monotonic() - started) * 1000))

    try:
        target = ssrf.check(subscription.url, get_settings().webhooks_allow_loopback)
    except ssrf.Refused as refused:
        return outcome(None, f"refused: url {refused.message}")
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.HEADER: signing.header_value([subscription.secret()], body, int(at.timestamp())),
        "Synapse-Event-Id": str(payload["id"]),
        "Synapse-Event-Type": str(payload["type"]),
    }
    try:
        status = post(target, body, headers)
    except (OSError, http.client.HTTPException) as error:
        return outcome(None, _describe(error))
    return outcome(status, None if 200 <= status < 300 else f"HTTP {status}")
