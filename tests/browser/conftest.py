"""Browser tests of the review console (docs/console.md): Debian's chromium driven by Playwright
against a real `make run` (tests/support/runner), axe-core's rules on every page.

One browser per module (Playwright's sync API holds an event loop open); the review pages run on
the process's shared runner (tests/conftest.py,
shared with the e2e tests), the pages that need a hosted UI (access, connect, members) on one runner
that offers it; each test gets a fresh browser context (its own sessionStorage) and a fresh mind.
The browser is the system's /usr/bin/chromium: `playwright install` is never run. axe-core comes from
`make axe-core` (.cache/axe-core/, checksum pinned).
Without chromium or axe-core the tests skip, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from playwright.sync_api import Browser, BrowserContext, Page, Route, ViewportSize, sync_playwright

from tests.support.runner import LOOPBACK, SHARED, STARTUP, RunningService, SharedStore, running

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / ".cache" / "axe-core" / "axe-4.14.1.min.js"
# The docs' screenshots are rewritten only on request (SYNAPSE_SCREENSHOTS=1), so a test run leaves
# the committed PNGs alone; otherwise they go to a temporary folder.
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
SCREENSHOTS = (
    DOCS_SCREENSHOTS
    if os.environ.get("SYNAPSE_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "synapse-console-screenshots"
)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTED_UI_ORIGIN = "https://auth.console-test.invalid"
# A runner whose console offers a hosted UI too (answered by HostedUi: no Cognito here).
HOSTED_UI = {"SYNAPSE_CONSOLE_COGNITO_DOMAIN": HOSTED_UI_ORIGIN, "SYNAPSE_JWT_CLIENT_ID": "console-client"}
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=360, height=740)


def _missing() -> str:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    if not AXE.is_file():
        return f"{AXE.relative_to(ROOT)} is missing (make axe-core)"
    return ""


@pytest.fixture(scope="session", autouse=True)
def _needs_a_browser() -> None:
    missing = _missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.fixture(scope="session")
def runner(_needs_a_browser: None, shared_runner: RunningService) -> RunningService:
    return shared_runner


@pytest.fixture(scope="session")
def hosted_ui_runner(
    tmp_path_factory: pytest.TempPathFactory, _needs_a_browser: None, shared_store: SharedStore
) -> Iterator[RunningService]:
    """A runner whose console offers a hosted UI too (a stand-in the browser's routes answer: no
    Cognito here) and which may deliver webhooks to this machine (their deliveries get listed); its
    tables are in the process's shared DynamoDB Local (no JVM start of its own)."""
    environment = {**SHARED, **LOOPBACK, **HOSTED_UI, **shared_store.env("hosted-ui")}
    with running(tmp_path_factory, "hosted-ui-runner", environment, timeout=STARTUP) as service:
        yield service


@pytest.fixture(scope="module")
def browser(_needs_a_browser: None) -> Iterator[Browser]:
    # Per module, not per session: Playwright's sync API keeps an event loop running on the worker's
    # thread while it is open, and the async client tests on the same worker need none to be.
    # launch() gives every run a fresh temporary profile (its own user-data-dir), removed on close.
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Console:
    """One browser tab on the console, with what the tests check on every page."""

    def __init__(self, page: Page, url: str) -> None:
        self.page = page
        self.url = url
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))

    def _console(self, message: Any) -> None:
        # A CSP violation or a script error is printed to the console as an error.
        if message.type == "error" and "status of 4" not in message.text:
            self.problems.append(f"console error: {message.text}")

    def open(self, hash_route: str = "") -> None:
        self.page.goto(f"{self.url}/console{hash_route}")
        self.page.wait_for_selector("body[data-ready=true]")

    def sign_in(self) -> None:
        self.open()
        self.page.get_by_role("button", name="Sign in as local-user").click()
        self.page.wait_for_selector("body:not(.signed-out) main h1")

    def go(self, hash_route: str, heading: str) -> None:
        self.page.evaluate("route => { location.hash = route; }", hash_route)
        self.wait_heading(heading)

    def wait_heading(self, heading: str) -> None:
        self.page.get_by_role("heading", level=1, name=heading).wait_for()
        self.wait_settled()

    def choose_mind(self, mind_id: str) -> None:
        self.page.get_by_label("Mind", exact=True).select_option(mind_id)
        self.wait_settled()

    def wait_settled(self) -> None:
        """Until the page on show has loaded (main is no longer aria-busy) and no request is in
        flight: a page loads in rounds, so the progress bar can hide between two of them."""
        self.page.wait_for_selector('main:not([aria-busy="true"])', state="attached")
        self.page.wait_for_selector("#progress[hidden]", state="attached")

    def axe_violations(self) -> list[dict[str, Any]]:
        """axe-core's violations on the page as it is now (injected via evaluate, which the page's CSP
        does not govern)."""
        if not self.page.evaluate("() => Boolean(window.axe)"):
            self.page.evaluate(AXE.read_text(encoding="utf-8"))
        found: list[dict[str, Any]] = self.page.evaluate(
            """() => axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(" "))})))"""
        )
        return found

    def assert_accessible(self, where: str = "") -> None:
        """No axe-core violation on the page once it has loaded (the message lists them)."""
        self.wait_settled()
        violations = self.axe_violations()
        assert violations == [], f"{where or self.page.url}: {json.dumps(violations, indent=1)}"

    def screenshot(self, name: str, show: str | None = None) -> None:
        """docs/screenshots/<name>-desktop.png and -360.png of the page as it is (viewport only),
        scrolled to the element `show` selects, if given."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for suffix, size in (("desktop", DESKTOP), ("360", PHONE)):
            self.page.set_viewport_size(size)
            if show:
                self.page.locator(show).evaluate("e => e.scrollIntoView({block: 'start'})")
            self.page.wait_for_timeout(100)  # layout settles after the resize
            self.page.screenshot(path=str(SCREENSHOTS / f"{name}-{suffix}.png"), animations="disabled")
        self.page.set_viewport_size(DESKTOP)


def accessible_everywhere(tab: Console, where: str) -> None:
    """axe-core finds nothing at the desktop and the 360 px viewports, in light and dark."""
    for scheme in ("light", "dark"):
        tab.page.emulate_media(color_scheme=scheme)
        for name, size in (("desktop", DESKTOP), ("360 px", PHONE)):
            tab.page.set_viewport_size(size)
            tab.assert_accessible(f"{where}, {scheme}, {name}")
    tab.page.emulate_media(color_scheme="light")
    tab.page.set_viewport_size(DESKTOP)


class HostedUi:
    """A stand-in for Cognito's hosted UI, answered by the browser's request routing: it sends the
    browser back with a code at once, and its token endpoint checks the PKCE pair before handing out
    the runner's JWT. `asked` is what the console's authorize request said."""

    def __init__(self, page: Page, runner: RunningService) -> None:
        self.runner = runner
        self.asked: dict[str, str] = {}
        page.route(f"{HOSTED_UI_ORIGIN}/oauth2/authorize?*", self._authorize)
        page.route(f"{HOSTED_UI_ORIGIN}/oauth2/token", self._token)

    def _authorize(self, route: Route) -> None:
        params = dict(parse_qsl(urlsplit(route.request.url).query))
        self.asked.update(params)
        back = f"{params['redirect_uri']}?code=the-code&state={params['state']}"
        route.fulfill(status=302, headers={"Location": back})

    def _token(self, route: Route) -> None:
        form = dict(parse_qsl(route.request.post_data or ""))
        digest = hashlib.sha256(form["code_verifier"].encode()).digest()
        assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == self.asked["code_challenge"]
        assert form["code"] == "the-code" and form["grant_type"] == "authorization_code"
        assert form["client_id"] == "console-client" and form["redirect_uri"] == self.asked["redirect_uri"]
        route.fulfill(
            json={"access_token": self.runner.jwt, "token_type": "Bearer"},
            headers={"Access-Control-Allow-Origin": self.runner.url},
        )


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    fresh = browser.new_context(viewport=DESKTOP, color_scheme="light", locale="en-GB", timezone_id="UTC")
    yield fresh
    fresh.close()


@pytest.fixture
def console(context: BrowserContext, runner: RunningService) -> Iterator[Console]:
    tab = Console(context.new_page(), runner.url)
    yield tab
    assert tab.problems == [], tab.problems


class Agent:
    """An agent (or a person with a JWT) calling the API directly, as the tests' Given steps do."""

    def __init__(self, url: str, credential: str, mind_id: str | None = None) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {credential}"}
        if mind_id:
            self.headers["X-Mind-Id"] = mind_id

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> requests.Response:
        return requests.request(
            method, self.url + path, json=body, params=params, headers=self.headers, timeout=30
        )

    def store(self, category: str, key: str, content: str, **fields: Any) -> dict[str, Any]:
        body = {"category": category, "key": key, "content": content, **fields}
        answer = self.call("POST", "/memory", body)
        assert answer.status_code in (200, 201, 202), answer.text
        stored: dict[str, Any] = answer.json()
        return stored


class Mind:
    def __init__(self, runner: RunningService, name: str) -> None:
        made = requests.post(
            f"{runner.url}/minds",
            json={"name": name},
            headers={"Authorization": f"Bearer {runner.jwt}"},
            timeout=30,
        )
        assert made.status_code == 201, made.text
        body = made.json()
        self.id: str = body["mind"]["id"]
        self.name = name
        self.agent = Agent(runner.url, body["mind_key"]["key"])
        self.person = Agent(runner.url, runner.jwt, self.id)


@pytest.fixture
def mind(runner: RunningService) -> Mind:
    """A fresh mind for the test (each test picks it in the console's mind picker)."""
    return Mind(runner, "Alex's assistant")
