"""Every answer under /console carries the console's security headers (docs/console.md "How it is
served"), the errors too: a missing or hidden file and the dev sign-in where there is none (the
console function's 404s), another method (the `$default` function's 405), and an unexpected
failure (500). Through the in-process gateway, as API Gateway routes them."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.api import console

from tests.support.api import Api
from tests.support.checks import assert_error

SECURITY_HEADERS = (
    "Content-Security-Policy",
    "X-Content-Type-Options",
    "X-Frame-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
)


def _assert_secured(headers: dict[str, str]) -> None:
    expected = console.security_headers()
    assert set(SECURITY_HEADERS) == set(expected)
    for name in SECURITY_HEADERS:
        assert headers.get(name) == expected[name], (name, headers)
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"


def test_the_page_and_its_files_carry_the_security_headers(api: Api) -> None:
    # The 200s (the reference the errors are held to) and a 304
    page = api.call("GET", "/console")
    script = api.call("GET", "/console/app.js")
    assert page.status == 200 and script.status == 200
    again = api.call("GET", "/console/app.js", headers={"If-None-Match": script.headers["ETag"]})
    assert again.status == 304
    for answer in (page, script, again):
        _assert_secured(answer.headers)


NOT_FILES = ["/console/nope.js", "/console/.hidden", "/console/../app.py", "/console/x.py"]
NO_DEV_SIGNIN = "/console/dev-token.json"  # where the local runner has not enabled it


@pytest.mark.parametrize("path", [*NOT_FILES, NO_DEV_SIGNIN])
def test_a_404_carries_the_security_headers(api: Api, path: str) -> None:
    answer = api.call("GET", path)
    assert_error(answer, 404)
    _assert_secured(answer.headers)


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/console"), ("DELETE", "/console/app.js"), ("PUT", "/console/nope.js"), ("HEAD", "/console")],
)
def test_another_method_is_a_405_with_the_security_headers(api: Api, method: str, path: str) -> None:
    answer = api.call(method, path)
    if method != "HEAD":  # a HEAD answer has no body to read the envelope from
        assert_error(answer, 405)
    assert answer.status == 405 and answer.headers["Allow"] == "GET"
    _assert_secured(answer.headers)


def test_an_unexpected_failure_is_a_500_with_the_security_headers(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(console, "_read", broken)
    answer = api.call("GET", "/console/app.js")
    assert_error(answer, 500)
    _assert_secured(answer.headers)


def test_the_api_s_own_errors_stay_as_they_were(api: Api) -> None:
    # Not the console: an unknown API path is the plain JSON envelope, without the page's policy
    answer = api.call("POST", "/consoles")
    assert_error(answer, 404)
    assert "Content-Security-Policy" not in answer.headers
