"""The local runner's HTTP server: waitress in front of `infra.gateway.Gateway`.

waitress parses HTTP/1.1 strictly, buffers each body before a thread sees it and serves from a
bounded pool (docs/architecture.md says why it was chosen). This module adds, so a client never
gets a silent close or a text/plain page: the error body (docs/rules.md §3) for every error waitress
answers itself (`JsonErrorTask`); a JSON 400 for a request that stalls half-sent (`FrontChannel`);
UTF-8 for the request line and header values (PEP 3333 passes latin-1); a 400 for unknown methods, 414
for long URIs; a 421 for a `Host` that is not a loopback name, before any route (DNS rebinding:
`host_allowed`; `SYNAPSE_ALLOWED_HOSTS` adds names); CORS preflights for the origins in
`SYNAPSE_CORS_ORIGINS`; and one access line per request, `synapse-local: METHOD PATH STATUS ms`
(the path only, never the query; tests grep it for 5xx).
What no route matches the gateway sends to the `$default` function (404, or 405 with `Allow`).

`HttpFront.shutdown()` stops accepting; `drain()` lets requests already received finish and their
answers reach the client; `server_close()` closes what is left.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from waitress import wasyncore  # type: ignore[import-untyped]  # no stubs pinned
from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser, ParsingError  # type: ignore[import-untyped]
from waitress.server import TcpWSGIServer  # type: ignore[import-untyped]
from waitress.task import ErrorTask  # type: ignore[import-untyped]
from waitress.utilities import BadRequest, Error  # type: ignore[import-untyped]

from infra.gateway import Gateway, HttpResponse, error_response

HOST = "127.0.0.1"
MAX_REQUEST_BYTES = 1024 * 1024  # handlers enforce 64 KiB (1 MiB for hooks); this guards the runner
MAX_HEADER_BYTES = 16 * 1024  # request line + headers; API Gateway allows 10 KiB
MAX_URI_CHARS = 8 * 1024
THREADS = 16
IDLE_SECONDS = 2.0  # a started request that sends nothing for this long is answered 400
HEADER_SECONDS = 10.0  # all headers within this, however slowly they trickle
BODY_SECONDS = 60.0  # the whole body within this
KEEP_ALIVE_SECONDS = 30  # an idle connection between requests is closed after this
CHECK_SECONDS = 0.25
LINGER_SECONDS = 2.0  # after an error answer, how long unread input is drained before closing

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The same CORS answer as template.yaml's CorsConfiguration (a test keeps them equal).
CORS_ALLOW_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CORS_ALLOW_HEADERS = (
    "authorization",
    "content-type",
    "if-match",
    "idempotency-key",
    "x-mind-id",
    "x-mind-key",
    "mcp-protocol-version",  # a browser MCP client (e.g. the MCP Inspector) sends it on /mcp
)
CORS_EXPOSE_HEADERS = ("idempotent-replayed", "location", "retry-after", "www-authenticate")
CORS_MAX_AGE = 600
# The names a browser puts in `Host` when it talks to this machine: any other name reaching the
# loopback socket is a page whose own name was rebound to 127.0.0.1 (DNS rebinding), or a proxy.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
ANY_HOST = "*"
_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[^\[\]:]+)(?::(?P<port>[0-9]{1,5}))?")
_NON_ASCII = re.compile(rb"[\x80-\xff]")
_NOT_PASSED_ON = frozenset(  # hop-by-hop headers (PEP 3333 forbids them) and our own Content-Length
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers"}
    | {"transfer-encoding", "upgrade", "content-length"}
)


def access_line(method: str, path: str, status: int, started: float) -> None:
    elapsed = (time.perf_counter() - started) * 1000
    sys.stderr.write(f"synapse-local: {method} {path} {status} {elapsed:.1f}ms\n")


def host_name(host: str) -> str | None:
    """The name of a `Host` header value, lower case and without its port (an IPv6 literal keeps its
    brackets); None when it is not `name` or `name:port`."""
    found = _HOST.fullmatch(host.strip().lower())
    return found["name"] if found else None


def allowed_hosts(setting: str) -> frozenset[str]:
    """The loopback names plus those `SYNAPSE_ALLOWED_HOSTS` lists (comma-separated, ports ignored;
    `*` allows any Host)."""
    extra = {ANY_HOST if entry.strip() == ANY_HOST else host_name(entry) for entry in setting.split(",")}
    return LOOPBACK_HOSTS | {name for name in extra if name}


def host_allowed(host: str | None, allowed: frozenset[str]) -> bool:
    """Whether a request with this `Host` is answered. No Host at all (HTTP/1.0) is: a browser always
    sends one, and only a browser can be rebound."""
    if not host or ANY_HOST in allowed:
        return True
    return host_name(host) in allowed


def _utf8(latin1: str) -> str:
    """PEP 3333 strings carry the raw bytes as latin-1: read them as the UTF-8 they are."""
    return latin1.encode("latin-1").decode("utf-8")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _header_value(text: str) -> str:
    """A response header value as PEP 3333 wants it: its UTF-8 bytes as a latin-1 string."""
    return text.encode("utf-8").decode("latin-1")


# ---------------------------------------------------------------- waitress, with JSON errors


class FrontParser(HTTPRequestParser):  # type: ignore[misc]  # waitress ships no types
    """waitress's parser, plus when the request began and a refusal of Content-Length with chunked."""

    def __init__(self, adj: Any) -> None:
        super().__init__(adj)
        self.started = time.time()

    def parse_header(self, header_plus: bytes) -> None:
        # Raw UTF-8 in the request line (curl sends `?q=Schäfer` as it is) is percent-encoded first:
        # waitress reads the target as ASCII and would refuse it; the handlers decode %XX as UTF-8.
        first_line, separator, rest = header_plus.partition(b"\r\n")
        first_line = _NON_ASCII.sub(lambda byte: b"%%%02X" % byte[0][0], first_line)
        super().parse_header(first_line + separator + rest)
        if self.chunked and "CONTENT_LENGTH" in self.headers:
            raise ParsingError("Content-Length and Transfer-Encoding: chunked together are ambiguous")


def _error_status(error: Error) -> tuple[int, str]:
    """waitress's error → (status, message); an unsupported Transfer-Encoding is a 400 like the rest."""
    status = 400 if int(error.code) == 501 else int(error.code)
    if status == 500:
        return status, "Something went wrong on our side."
    if status == 413:
        return status, f"The body is over {MAX_REQUEST_BYTES} bytes."
    if status == 431:
        return status, f"The request line and headers are over {MAX_HEADER_BYTES} bytes."
    detail = str(error.body).strip().rstrip(".") or error.reason
    return status, f"Malformed request: {detail}."


class JsonErrorTask(ErrorTask):  # type: ignore[misc]
    """waitress answers malformed requests with text/plain; this answers the error body of rules §3."""

    def execute(self) -> None:
        started = time.perf_counter()
        status, message = _error_status(self.request.error)
        answer = error_response(status, message)
        self.status = f"{status} {_reason(status)}"
        self.channel.linger_on_close = True  # the client may still be sending what we will not read
        self.response_headers.extend(answer.headers.items())
        self.set_close_on_finish()
        self.content_length = len(answer.body)
        # Logged before the answer is written: once written, the client may be done (and a test's
        # captured output closed) before this thread gets to the line.
        method = getattr(self.request, "command", "") or "-"
        path = getattr(self.request, "path", "") or "-"
        access_line(method, path.split("?")[0][:200], status, started)
        self.write(answer.body)


class FrontChannel(HTTPChannel):  # type: ignore[misc]
    """waitress's connection, answering errors in JSON, expiring stalled requests, and closing
    after an error the way a client can read: stop writing, read and drop what the client still
    sends for up to `LINGER_SECONDS`, then close (an immediate close would reset the connection
    and could destroy the answer before the client reads it)."""

    error_task_class = JsonErrorTask
    parser_class = FrontParser
    request: Any = None  # the request being received (waitress's own class attribute, typed)
    linger_on_close = False
    _linger_until: float | None = None

    def handle_close(self) -> None:
        if self.linger_on_close and self._linger_until is None and self.connected:
            try:
                self.socket.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            else:
                self._linger_until = time.time() + LINGER_SECONDS
                self.will_close = self.close_when_flushed = False
                return
        super().handle_close()

    def readable(self) -> bool:
        return self._linger_until is not None or bool(super().readable())

    def writable(self) -> bool:
        return self._linger_until is None and bool(super().writable())

    def handle_read(self) -> None:
        if self._linger_until is None:
            super().handle_read()
            return
        try:
            data = self.recv(self.adj.recv_bytes)  # b"" at end of stream, after closing us
        except OSError:
            data = b""
        if data and time.time() > self._linger_until:
            super().handle_close()

    def expire_stalled_request(self, now: float) -> None:
        """Answer a request that stopped half-way with a 400 rather than wait or close in silence.
        Runs on the event loop's thread, like `received`."""
        if self._linger_until is not None:
            if now > self._linger_until:
                super().handle_close()
            return
        with self.requests_lock:
            request = self.request
            if request is None or request.completed or self.requests or self.will_close:
                return
            budget = BODY_SECONDS if request.headers_finished else HEADER_SECONDS
            idle = now - self.last_activity >= IDLE_SECONDS
            if not idle and now - request.started < budget:
                return
            part = "body" if request.headers_finished else "headers"
            if not request.headers_finished:
                request.parse_header(b"GET / HTTP/1.0\r\n")
                request.command, request.path = "-", "-"
            expected = f" ({request.content_length} bytes announced)" if request.content_length else ""
            request.error = BadRequest(f"the {part} did not arrive in time{expected}")
            request.completed = True
            self.request = None
            self.requests.append(request)
            self.server.add_task(self)


class FrontServer(TcpWSGIServer):  # type: ignore[misc]
    channel_class = FrontChannel


# ---------------------------------------------------------------- the WSGI app


StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class FrontApp:
    """WSGI → the gateway's (method, path, query, headers, body) → WSGI."""

    def __init__(
        self,
        gateway: Gateway,
        on_write: Callable[[], None],
        cors_origins: Iterable[str],
        hosts: frozenset[str] = LOOPBACK_HOSTS,
    ) -> None:
        self.gateway = gateway
        self.on_write = on_write
        self.cors_origins = frozenset(o.strip() for o in cors_origins if o.strip())
        self.hosts = hosts

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        started = time.perf_counter()
        method = str(environ["REQUEST_METHOD"])
        raw_uri = str(environ.get("REQUEST_URI") or environ.get("PATH_INFO") or "/")
        path, _, query = raw_uri.partition("?")
        path = path.split("#")[0]
        headers: dict[str, str] = {}
        try:
            answer = self._answer(environ, method, path, query, headers)
        except Exception as error:  # the gateway itself failed (e.g. DynamoDB unreachable)
            sys.stderr.write(f"synapse-local: gateway error: {type(error).__name__}: {error}\n")
            answer = error_response(500, "Something went wrong on our side.")
        answer = self._with_cors(answer, headers)
        response_headers = [
            (name, _header_value(value))
            for name, value in answer.headers.items()
            if name.lower() not in _NOT_PASSED_ON
        ]
        response_headers.append(("Content-Length", str(len(answer.body))))
        start_response(f"{answer.status} {_reason(answer.status)}", response_headers)
        shown = path if path.startswith("/") else "-"
        access_line(method if method.isalpha() else "-", shown[:200], answer.status, started)
        return [] if method == "HEAD" else [answer.body]

    def _answer(
        self, environ: dict[str, Any], method: str, path: str, query: str, headers: dict[str, str]
    ) -> HttpResponse:
        if method not in KNOWN_METHODS:
            return error_response(400, f"Unknown method {method[:20]}: use GET, POST, PUT, PATCH or DELETE.")
        if len(path) + len(query) > MAX_URI_CHARS:
            return error_response(414, f"The URI is over {MAX_URI_CHARS} characters.")
        if not path.startswith("/"):
            return error_response(400, "The request target must be a path starting with /.")
        try:
            path, query = _utf8(path), _utf8(query)
        except UnicodeDecodeError:
            return error_response(400, "The path or query string is not valid UTF-8.")
        headers.update(_headers_of(environ))
        if not host_allowed(headers.get("host"), self.hosts):  # before any route, the console's too
            return error_response(
                421,
                f"This server answers to Host 127.0.0.1, localhost or [::1], not {headers['host'][:100]!r}: "
                "call it by one of those, or list the name in SYNAPSE_ALLOWED_HOSTS.",
            )
        preflight = method == "OPTIONS" and "access-control-request-method" in headers
        if preflight and self._allowed_origin(headers):
            return HttpResponse(204, self._preflight_headers(headers), b"")
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if len(body) > MAX_REQUEST_BYTES:  # waitress refuses these first; kept for the 413 contract
            return error_response(413, f"The body is over {MAX_REQUEST_BYTES} bytes.")
        if method in WRITE_METHODS:
            self.on_write()
        return self.gateway.handle(method, path, query, headers, body)

    def _allowed_origin(self, headers: dict[str, str]) -> str | None:
        origin = headers.get("origin", "")
        return origin if origin in self.cors_origins else None

    def _preflight_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {
            "Access-Control-Allow-Origin": headers["origin"],
            "Access-Control-Allow-Methods": ",".join(CORS_ALLOW_METHODS),
            "Access-Control-Allow-Headers": ",".join(CORS_ALLOW_HEADERS),
            "Access-Control-Max-Age": str(CORS_MAX_AGE),
            "Vary": "Origin",
        }

    def _with_cors(self, answer: HttpResponse, headers: dict[str, str]) -> HttpResponse:
        origin = self._allowed_origin(headers)
        if origin is None or "Access-Control-Allow-Origin" in answer.headers:
            return answer
        extra = {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Expose-Headers": ",".join(CORS_EXPOSE_HEADERS),
            "Vary": "Origin",
        }
        return HttpResponse(answer.status, {**answer.headers, **extra}, answer.body)


def _headers_of(environ: dict[str, Any]) -> dict[str, str]:
    """Request headers by lower-case name, values read as UTF-8 (latin-1 when they are not)."""
    headers = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:]
        elif key in {"CONTENT_TYPE", "CONTENT_LENGTH"}:
            name = key
        else:
            continue
        try:
            text = _utf8(str(value))
        except UnicodeDecodeError:
            text = str(value)
        headers[name.lower().replace("_", "-")] = text
    return headers


# ---------------------------------------------------------------- the server the runner starts


def bound_listener(port: int, host: str = HOST) -> socket.socket:
    """The API's socket, bound but not yet listening. The runner binds it before it starts its store:
    the store's clients take ephemeral source ports from the range a free port was picked from, and
    one of them could otherwise hold the port by the time the API binds it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
    except OSError:
        listener.close()
        raise
    return listener


class HttpFront:
    """The runner's server: `serve_forever` on a thread, then `shutdown`, `drain`, `server_close`."""

    def __init__(
        self,
        port: int | socket.socket,
        gateway: Gateway,
        on_write: Callable[[], None] = lambda: None,
        cors_origins: Iterable[str] | None = None,
        host: str = HOST,
        hosts: str | None = None,
    ) -> None:
        if cors_origins is None:
            cors_origins = os.environ.get("SYNAPSE_CORS_ORIGINS", "").split(",")
        if hosts is None:
            hosts = os.environ.get("SYNAPSE_ALLOWED_HOSTS", "")
        self.app = FrontApp(gateway, on_write, cors_origins, allowed_hosts(hosts))
        self._map: dict[int, Any] = {}
        listener = port if isinstance(port, socket.socket) else bound_listener(port, host)
        self.server = FrontServer(
            self.app,
            map=self._map,
            _sock=listener,
            bind_socket=False,
            sockinfo=(listener.family, listener.type, listener.proto, listener.getsockname()),
            threads=THREADS,
            backlog=128,
            connection_limit=256,
            channel_timeout=KEEP_ALIVE_SECONDS,
            cleanup_interval=1,
            max_request_header_size=MAX_HEADER_BYTES,
            max_request_body_size=MAX_REQUEST_BYTES + 1,  # waitress refuses at >=: allow exactly 1 MiB
            ident="synapse-local",
            expose_tracebacks=False,
            log_socket_errors=False,
            clear_untrusted_proxy_headers=False,
        )
        self.server_address = (listener.getsockname()[0], int(self.server.effective_port))
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False
        self._loop_done = threading.Event()
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "queue depth" under bursts

    def serve_forever(self, poll_interval: float = CHECK_SECONDS) -> None:
        """The event loop (one thread; handlers run on the pool), until `server_close`."""
        self._serving = True
        try:
            while not self._stopped.is_set():
                if self._stopping.is_set():
                    self._stop_accepting_and_idle_connections()
                wasyncore.loop(timeout=poll_interval, map=self._map, use_poll=True, count=1)
                now = time.time()
                for channel in list(self.server.active_channels.values()):
                    channel.expire_stalled_request(now)
        finally:
            self._close_all()
            self._loop_done.set()

    def shutdown(self) -> None:
        """Stop taking connections and new requests; requests already received go on."""
        self._stopping.set()

    def busy(self) -> bool:
        channels = list(self.server.active_channels.values())
        return any(c.requests or c.total_outbufs_len for c in channels)

    def drain(self, timeout: float) -> None:
        """Wait (up to `timeout` s) until every request received is answered and its answer sent."""
        deadline = time.monotonic() + timeout
        while self.busy() and time.monotonic() < deadline:
            time.sleep(0.05)

    def server_close(self) -> None:
        """End the loop and close every connection (the loop's thread closes them when it runs)."""
        running = self._serving and not self._loop_done.is_set()
        self._stopping.set()
        self._stopped.set()
        if not (running and self._loop_done.wait(5)):
            self._close_all()

    def _close_all(self) -> None:
        wasyncore.close_all(self._map)
        self.server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)

    def _stop_accepting_and_idle_connections(self) -> None:
        if self.server.accepting:
            self.server.accepting = False
            self.server.del_channel()
            self.server.socket.close()
        for channel in list(self.server.active_channels.values()):
            if not channel.requests and channel.request is None and not channel.total_outbufs_len:
                channel.will_close = True
