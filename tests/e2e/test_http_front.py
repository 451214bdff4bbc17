"""`make run`'s HTTP front as a client meets it, on raw sockets against the real runner process:
malformed requests get a JSON 400 within 5 s, unmatched routes SPEC's 404/405, and raw UTF-8 in
the query string finds what it names, as on API Gateway."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import Http
from tests.support.api import MindHandle, memory_body
from tests.support.raw_http import RawAnswer, address_of, assert_error_envelope, exchange
from tests.support.runner import RunningService

MALFORMED = {
    "content_length_not_ascii_digits": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: \xc2\xb2\r\n\r\nab"
    ),
    "negative_chunk_size": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nab\r\n0\r\n\r\n"
    ),
    "body_shorter_than_announced": b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab",
    "two_content_lengths": (
        b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab"
    ),
    "unknown_method": b"FROB /memory HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_request_gets_a_json_400_within_five_seconds(runner: RunningService, case: str) -> None:
    # When the runner receives a malformed request (every socket read times out after 5 s)
    answer = exchange(address_of(runner.url), MALFORMED[case])
    # Then it answers a 400 in SPEC's error body, with a request id
    assert_error_envelope(answer, 400, "bad_request")


def test_an_unknown_route_is_a_404_and_a_wrong_method_a_405(runner: RunningService) -> None:
    address = address_of(runner.url)
    unknown = exchange(address, b"GET /nothing/here HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert_error_envelope(unknown, 404, "not_found")
    trailing = exchange(address, b"GET /minds/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert_error_envelope(trailing, 404, "not_found")
    wrong = exchange(address, b"DELETE /memory HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert_error_envelope(wrong, 405, "method_not_allowed")
    assert wrong.headers["allow"] == "GET, POST"


def _get(runner: RunningService, target: str, headers: dict[str, str]) -> RawAnswer:
    lines = [f"GET {target} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return exchange(address_of(runner.url), ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))


def test_raw_utf8_in_the_query_string_finds_what_it_names(
    runner: RunningService, http: Http, mind: MindHandle
) -> None:
    # Given a memory about Michael Schäfer, stored through the API
    body = memory_body(key="colleague", content="Michael Schäfer reviews the deploys")
    assert http.call("POST", "/memory", token=mind.key, json_body=body).status_code == 201
    # When a client sends `?q=Schäfer` with the UTF-8 bytes as they are (as curl does)
    auth = {"Authorization": f"Bearer {mind.key}"}
    deadline = time.monotonic() + 15
    while True:
        answer = _get(runner, "/memory/search?q=Schäfer", auth)
        assert answer.status == 200, answer.body
        results = answer.json()["results"]
        if results or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    # Then search reads it as UTF-8 and finds the memory
    assert [r["memory"]["key"] for r in results] == ["colleague"]


def test_a_non_ascii_header_value_is_read_as_utf8(runner: RunningService, mind: MindHandle) -> None:
    # When an agent names a mind that is not its own, in non-ASCII
    answer = _get(runner, "/memory", {"Authorization": f"Bearer {mind.key}", "X-Mind-Id": "m_Müller"})
    # Then the error names it as it was sent, not garbled
    error = assert_error_envelope(answer, 404, "not_found")
    assert "m_Müller" in error["message"], json.dumps(error, ensure_ascii=False)
