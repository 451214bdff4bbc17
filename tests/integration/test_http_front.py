"""The runner's HTTP front (infra/http_front.py) on a real socket, in process over moto: malformed
requests get SPEC's error body with a 400 (413/431 where those apply) within 5 s, never a silent close
or a text/plain page; unmatched routes are the `$default` function's 404/405; CORS preflights match
the template; UTF-8 in the request line and headers arrives as UTF-8; a stop lets requests finish."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest

from infra import http_front, template
from infra.gateway import HttpResponse
from infra.http_front import HttpFront
from tests.support.api import Api, gateway
from tests.support.raw_http import RawAnswer, assert_error_envelope, exchange, read_answer

ORIGIN = "https://app.example.com"
Address = tuple[str, int]


def _serve(front: HttpFront) -> Iterator[Address]:
    thread = threading.Thread(target=front.serve_forever, daemon=True)
    thread.start()
    yield front.server_address
    front.shutdown()
    front.drain(5)
    front.server_close()
    thread.join(5)


@pytest.fixture
def server(api: Api) -> Iterator[Address]:
    """The front over the real gateway (handlers over moto), CORS allowed for ORIGIN."""
    yield from _serve(HttpFront(0, gateway(), cors_origins=[ORIGIN]))


class RecordingGateway:
    """Answers 200 and keeps what the front handed over; waits for `release` when told to."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, dict[str, str], bytes]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def handle(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> HttpResponse:
        self.calls.append((method, path, query, headers, body))
        self.entered.set()
        self.release.wait(10)
        return HttpResponse(200, {"Content-Type": "application/json"}, b'{"ok":true}')


@pytest.fixture
def recorder() -> RecordingGateway:
    return RecordingGateway()


@pytest.fixture
def recorded_server(recorder: RecordingGateway) -> Iterator[Address]:
    front: Any = recorder  # duck-typed stand-in for infra.gateway.Gateway
    yield from _serve(HttpFront(0, front))


def request(
    method: str,
    target: str,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    host: str = "127.0.0.1",
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# ---------------------------------------------------------------- malformed requests

MALFORMED = {
    "content_length_not_ascii_digits": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: \xc2\xb2\r\n\r\nab",
        400,
    ),
    "negative_chunk_size": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nab\r\n0\r\n\r\n",
        400,
    ),
    "chunk_size_not_hex": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
        400,
    ),
    "two_content_lengths": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
        400,
    ),
    "content_length_with_chunked": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    "unsupported_transfer_encoding": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
        400,
    ),
    "body_shorter_than_announced": (b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab", 400),
    "headers_never_finished": (b"GET /memory HTTP/1.1\r\nHost: x\r\n", 400),
    "unknown_method": (b"FROB /memory HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "lower_case_method": (b"get /memory HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "garbage_request_line": (b"\x00\x01 hello\r\n\r\n", 400),
    "over_long_uri": (b"GET /memory?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "huge_headers": (b"GET /memory HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n", 431),
    "content_length_over_one_mebibyte": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n" + b"x" * 2_000_000,
        413,
    ),
    "chunked_body_over_one_mebibyte": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"10000\r\n"
        + b"x" * 0x10000
        + b"\r\n"
        + (b"10000\r\n" + b"x" * 0x10000 + b"\r\n") * 20,
        413,
    ),
    "absolute_form_target": (b"GET http://example.com/memory HTTP/1.1\r\nHost: x\r\n\r\n", 400),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_request_gets_a_json_error_within_five_seconds(server: Address, case: str) -> None:
    # Given a request no well-behaved client sends
    raw, status = MALFORMED[case]
    # When it is sent on a raw socket (each read times out after 5 s: a hang fails the test)
    answer = exchange(server, raw)
    # Then the answer is SPEC's error body with the status that fits
    assert_error_envelope(answer, status)


def test_a_stalled_body_is_answered_and_the_connection_closed(server: Address) -> None:
    with socket.create_connection(server, timeout=5) as connection:
        connection.sendall(b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        answer = read_answer(connection)
        assert "did not arrive in time" in assert_error_envelope(answer, 400, "bad_request")["message"]
        assert answer.headers["connection"] == "close"
        assert connection.recv(10) == b""  # closed, not left hanging


def test_a_malformed_request_is_never_answered_in_text(server: Address) -> None:
    answer = exchange(server, MALFORMED["two_content_lengths"][0])
    assert b"waitress" not in answer.body and b"generated by" not in answer.body


# ---------------------------------------------------------------- unmatched routes, HEAD, OPTIONS


@pytest.mark.parametrize("path", ["/nothing/here", "/minds/", "/memory/", "/minds/m_1/keys/k_1/extra"])
def test_an_unknown_route_is_a_404_in_the_envelope(server: Address, path: str) -> None:
    answer = exchange(server, request("GET", path))
    assert "Allow" not in answer.headers
    assert_error_envelope(answer, 404, "not_found")


def test_a_known_path_with_another_method_is_a_405_with_allow(server: Address) -> None:
    answer = exchange(server, request("PATCH", "/memory", {"Content-Length": "0"}))
    error = assert_error_envelope(answer, 405, "method_not_allowed")
    assert answer.headers["allow"] == "GET, POST"
    assert error["details"] == [{"allowed": ["GET", "POST"]}]


def test_head_is_a_405_without_a_body(server: Address) -> None:
    answer = exchange(server, request("HEAD", "/minds", {"Connection": "close"}), head=True)
    assert answer.status == 405 and answer.headers["allow"] == "GET, POST"
    assert answer.body == b""


def test_options_without_an_allowed_origin_is_a_405(server: Address) -> None:
    answer = exchange(server, request("OPTIONS", "/minds", {"Origin": "https://elsewhere.example"}))
    assert_error_envelope(answer, 405, "method_not_allowed")
    assert "access-control-allow-origin" not in answer.headers


def test_a_preflight_from_an_allowed_origin_gets_the_templates_cors_answer(server: Address) -> None:
    # When a browser at an allowed origin asks before a POST
    headers = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    answer = exchange(server, request("OPTIONS", "/memory", headers))
    # Then the answer is the one API Gateway gives with the template's CorsConfiguration
    cors = template.load()["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"]["Fn::If"][1]
    assert answer.status == 204
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert answer.headers["access-control-allow-methods"].split(",") == cors["AllowMethods"]
    assert answer.headers["access-control-allow-headers"].split(",") == cors["AllowHeaders"]
    assert answer.headers["access-control-max-age"] == str(cors["MaxAge"])


def test_answers_to_an_allowed_origin_carry_cors_headers(server: Address) -> None:
    answer = exchange(server, request("GET", "/memory", {"Origin": ORIGIN}))
    assert answer.status == 401  # no credential, still readable by the page
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert answer.headers["access-control-expose-headers"] == ",".join(http_front.CORS_EXPOSE_HEADERS)
    other = exchange(server, request("GET", "/memory", {"Origin": "https://elsewhere.example"}))
    assert "access-control-allow-origin" not in other.headers


def test_the_front_answers_cors_as_the_template_configures_it() -> None:
    cors = template.load()["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"]["Fn::If"][1]
    assert list(http_front.CORS_ALLOW_METHODS) == cors["AllowMethods"]
    assert list(http_front.CORS_ALLOW_HEADERS) == cors["AllowHeaders"]
    assert list(http_front.CORS_EXPOSE_HEADERS) == cors["ExposeHeaders"]
    assert cors["MaxAge"] == http_front.CORS_MAX_AGE


# ---------------------------------------------------------------- Host: DNS rebinding


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/console/dev-token.json"), ("GET", "/minds"), ("POST", "/memory"), ("GET", "/nothing/here")],
)
def test_a_host_that_is_not_loopback_is_refused_with_421_before_any_route(
    server: Address, method: str, path: str
) -> None:
    # Given a page at attacker.example whose name was rebound to 127.0.0.1 (the browser sends its Host)
    # When it calls the runner, even the console's dev sign-in
    answer = exchange(server, request(method, path, {"Content-Length": "0"}, host="attacker.example:3000"))
    # Then the answer is a 421 in SPEC's error envelope, naming what to do instead
    error = assert_error_envelope(answer, 421, "misdirected_request")
    assert "SYNAPSE_ALLOWED_HOSTS" in error["message"] and "attacker.example:3000" in error["message"]


def test_a_preflight_from_a_rebound_page_is_refused_too(server: Address) -> None:
    headers = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    answer = exchange(server, request("OPTIONS", "/memory", headers, host="attacker.example"))
    assert_error_envelope(answer, 421, "misdirected_request")


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:3000", "localhost", "LocalHost:3000", "[::1]", "[::1]:3000", "[::1]:8080"],
)
def test_loopback_host_names_with_or_without_a_port_reach_the_gateway(
    recorded_server: Address, recorder: RecordingGateway, host: str
) -> None:
    answer = exchange(recorded_server, request("GET", "/minds", host=host))
    assert answer.status == 200
    assert recorder.calls[-1][3]["host"] == host


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "127.0.0.1.nip.io:3000", "localhost.attacker.example", "localhost:x", "[::2]"],
)
def test_other_hosts_never_reach_the_gateway(
    recorded_server: Address, recorder: RecordingGateway, host: str
) -> None:
    assert exchange(recorded_server, request("GET", "/minds", host=host)).status == 421
    assert recorder.calls == []


def test_synapse_allowed_hosts_adds_names_and_star_allows_any(recorder: RecordingGateway) -> None:
    front: Any = recorder
    # Given a front told to answer to synapse.test too (SYNAPSE_ALLOWED_HOSTS, ports ignored)
    for address in _serve(HttpFront(0, front, hosts=" Synapse.test:8080 , other.test")):
        # Then that name is answered with any port, loopback still is, and other names are not
        assert exchange(address, request("GET", "/minds", host="synapse.TEST:3000")).status == 200
        assert exchange(address, request("GET", "/minds", host="other.test")).status == 200
        assert exchange(address, request("GET", "/minds", host="localhost")).status == 200
        assert exchange(address, request("GET", "/minds", host="attacker.example")).status == 421
    # And `*` turns the check off
    for address in _serve(HttpFront(0, front, hosts="*")):
        assert exchange(address, request("GET", "/minds", host="attacker.example")).status == 200


# ---------------------------------------------------------------- what reaches the gateway


def test_raw_utf8_in_the_query_and_headers_reaches_the_gateway_as_utf8(
    recorded_server: Address, recorder: RecordingGateway
) -> None:
    # When curl-style raw UTF-8 is sent in the query string and a header
    raw = "GET /memory/search?q=Schäfer HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Mind-Id: m_Müller\r\n\r\n".encode()
    answer = exchange(recorded_server, raw)
    # Then the gateway sees the text that was sent, not its latin-1 reading
    assert answer.status == 200
    method, path, query, headers, _ = recorder.calls[-1]
    assert (method, path, parse_qs(query)) == ("GET", "/memory/search", {"q": ["Schäfer"]})
    assert headers["x-mind-id"] == "m_Müller"


def test_a_chunked_body_arrives_whole(recorded_server: Address, recorder: RecordingGateway) -> None:
    raw = b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw += b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    assert exchange(recorded_server, raw).status == 200
    assert recorder.calls[-1][4] == b"abcde"


def test_a_body_of_exactly_one_mebibyte_is_accepted(
    recorded_server: Address, recorder: RecordingGateway
) -> None:
    body = b"x" * http_front.MAX_REQUEST_BYTES
    answer = exchange(recorded_server, request("POST", "/hooks/h", {"Content-Length": str(len(body))}, body))
    assert answer.status == 200 and len(recorder.calls[-1][4]) == len(body)


def test_a_stop_lets_the_request_in_flight_finish(recorder: RecordingGateway) -> None:
    # Given a request the gateway is still answering
    front = HttpFront(0, recorder)  # type: ignore[arg-type]
    thread = threading.Thread(target=front.serve_forever, daemon=True)
    thread.start()
    recorder.release.clear()
    answers: list[RawAnswer] = []
    client = threading.Thread(
        target=lambda: answers.append(exchange(front.server_address, request("GET", "/x")))
    )
    client.start()
    assert recorder.entered.wait(5)
    # When the runner stops: no new connections, then a drain
    front.shutdown()
    deadline = time.monotonic() + 5
    while front.server.accepting and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(OSError):
        socket.create_connection(front.server_address, timeout=1).close()
    recorder.release.set()
    front.drain(5)
    client.join(5)
    front.server_close()
    thread.join(5)
    # Then the request in flight got its answer
    assert [a.status for a in answers] == [200]
