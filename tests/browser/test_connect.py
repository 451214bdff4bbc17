"""Connecting an app over OAuth in a real browser (docs/console.md, "Connecting an app"): the consent
page an app's /oauth/authorize sends the person to, approved and denied; its errors; the way back to it
through a hosted UI's sign-in; the Access page's connected apps, revoked; the setting for critical
priority by agents."""

from __future__ import annotations

import re
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import Console, HostedUi, Mind
from tests.support.oauth import pkce, query_of
from tests.support.runner import RunningService

CALLBACK = "http://127.0.0.1:9/cb"  # nothing listens there: the browser's routing answers it
APP = "Claude"


@pytest.fixture
def runner(hosted_ui_runner: RunningService) -> RunningService:
    """The console here offers a hosted UI too (a stand-in the browser's routes answer)."""
    return hosted_ui_runner


class App:
    """A connector on the far side of the flow: registered, with an authorization request started
    (PKCE S256) whose consent page is `consent_url`."""

    def __init__(
        self, runner: RunningService, scope: str = "read write", state: str = "st-42", **overrides: str
    ) -> None:
        self.runner = runner
        self.pkce = pkce()
        self.state = state
        registered = requests.post(
            f"{runner.url}/oauth/register",
            json={"client_name": APP, "redirect_uris": [CALLBACK]},
            timeout=30,
        )
        assert registered.status_code == 201, registered.text
        self.client_id: str = registered.json()["client_id"]
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": CALLBACK,
            "state": state,
            "code_challenge": self.pkce.challenge,
            "code_challenge_method": "S256",
            "scope": scope,
            "resource": f"{runner.url}/mcp",
            **overrides,
        }
        started = requests.get(
            f"{runner.url}/oauth/authorize", params=params, allow_redirects=False, timeout=30
        )
        assert started.status_code == 302, started.text
        self.consent_url: str = started.headers["Location"]
        assert self.consent_url.startswith(f"{runner.url}/console#/connect/oar_"), self.consent_url
        self.request_id = self.consent_url.rsplit("/", 1)[1]

    def exchange(self, code: str) -> dict[str, Any]:
        answer = requests.post(
            f"{self.runner.url}/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": CALLBACK,
                "client_id": self.client_id,
                "code_verifier": self.pkce.verifier,
                "resource": f"{self.runner.url}/mcp",
            },
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        tokens: dict[str, Any] = answer.json()
        return tokens

    def connected_to(self, mind: Mind, scopes: list[str]) -> dict[str, Any]:
        """Approved by the person through the API (the consent page's own request), then exchanged."""
        body = {"approve": True, "mind_id": mind.id, "scopes": scopes}
        decided = mind.person.call("POST", f"/oauth/requests/{self.request_id}", body)
        assert decided.status_code == 200, decided.text
        return self.exchange(query_of(decided.json()["redirect_to"])["code"])


def catch_the_way_back(page: Page) -> None:
    """The app's redirect URI answers with a plain page (nothing listens on 127.0.0.1:9)."""

    def callback(route: Route) -> None:
        route.fulfill(status=200, content_type="text/plain", body="back at the app")

    page.route(re.compile(r"^http://127\.0\.0\.1:9/"), callback)


def mcp_status(runner: RunningService, token: str) -> int:
    ping: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return requests.post(f"{runner.url}/mcp", json=ping, headers=headers, timeout=30).status_code


def open_consent(console: Console, app: App, heading: str = f"{APP} wants to use a mind of yours") -> None:
    """The browser arrives from /oauth/authorize signed out, signs in as the dev user, and is on the
    consent page."""
    console.page.goto(app.consent_url)
    console.page.wait_for_selector("body[data-ready=true]")
    expect(
        console.page.get_by_text("An app asks to use one of your minds: sign in to answer it.")
    ).to_be_visible()
    console.page.get_by_role("button", name="Sign in as local-user").click()
    console.wait_heading(heading)


def test_an_approved_app_goes_back_with_a_code_for_the_mind_and_scopes_chosen(
    console: Console, runner: RunningService, mind: Mind
) -> None:
    # Given an app that asked for read and write, and a person who arrives signed out
    app = App(runner, scope="read write")
    catch_the_way_back(console.page)
    open_consent(console, app)
    # Then the page names the app and, as prominently, the host its answer goes to; the scopes it
    # asked for are ticked
    expect(console.page.locator("#redirect-host")).to_have_text("127.0.0.1:9")
    expect(console.page.locator("#grant-read")).to_be_checked()
    expect(console.page.locator("#grant-write")).to_be_checked()
    expect(console.page.locator("#grant-delete")).not_to_be_checked()
    console.assert_accessible("consent, light")
    console.page.emulate_media(color_scheme="dark")
    console.assert_accessible("consent, dark")
    console.page.emulate_media(color_scheme="light")
    console.screenshot("consent")
    # When the person picks the mind, leaves the app read only, and approves
    console.page.get_by_label("Mind the app may use").select_option(mind.id)
    console.page.locator("#grant-write").uncheck()
    console.page.get_by_role("button", name="Approve").click()
    # Then the browser is back at the app's redirect URI with a code and the app's state
    console.page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:9/cb\?"))
    sent = query_of(console.page.url)
    assert sent["state"] == app.state and sent["code"]
    # And the code buys a token with read alone, on that mind
    tokens = app.exchange(sent["code"])
    assert tokens["scope"] == "read"
    assert mcp_status(runner, tokens["access_token"]) == 200
    grants = mind.person.call("GET", f"/minds/{mind.id}/grants").json()["grants"]
    assert [(g["client_name"], g["scopes"]) for g in grants] == [(APP, ["read"])]


def test_a_denied_app_goes_back_with_access_denied(
    console: Console, runner: RunningService, mind: Mind
) -> None:
    # Given the consent page of an app's request
    app = App(runner, scope="read write delete")
    catch_the_way_back(console.page)
    open_consent(console, app)
    # When the person denies it
    console.page.get_by_role("button", name="Deny").click()
    # Then the browser is back at the app with error=access_denied and its state, and no grant exists
    console.page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:9/cb\?"))
    sent = query_of(console.page.url)
    assert sent["error"] == "access_denied" and sent["state"] == app.state and "code" not in sent
    assert mind.person.call("GET", f"/minds/{mind.id}/grants").json()["grants"] == []


def test_a_faulty_request_is_shown_and_goes_back_to_the_app_only_by_the_persons_choice(
    console: Console, runner: RunningService, mind: Mind
) -> None:
    # Given an app whose request names another resource (RFC 9700 §4.11.2: not redirected at once)
    app = App(runner, resource="https://elsewhere.example/mcp")
    catch_the_way_back(console.page)
    open_consent(console, app, heading=f"{APP} sent a request that cannot be approved")
    # Then the person sees what is wrong and where going back leads, and cannot approve it
    expect(console.page.get_by_text("invalid_target")).to_be_visible()
    expect(console.page.locator("#redirect-host")).to_have_text("127.0.0.1:9")
    expect(console.page.get_by_role("button", name="Approve")).to_have_count(0)
    console.assert_accessible("consent of a faulty request")
    # When they choose to go back, the app gets the error and its state
    console.page.get_by_role("button", name="Go back to the app").click()
    console.page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:9/cb\?"))
    sent = query_of(console.page.url)
    assert sent["error"] == "invalid_target" and sent["state"] == app.state and "code" not in sent


def test_no_scope_and_an_answered_request_are_explained_in_the_apis_words(
    console: Console, runner: RunningService, mind: Mind
) -> None:
    # Given the consent page of an app's request, every scope unticked
    app = App(runner, scope="read")
    open_consent(console, app)
    console.page.locator("#grant-read").uncheck()
    # When the person approves, the API's 422 naming scopes is shown and they stay on the page
    console.page.get_by_role("button", name="Approve").click()
    expect(console.page.get_by_role("alert")).to_contain_text("Could not approve: scopes:")
    assert "#/connect/" in console.page.url
    console.assert_accessible("consent with an error")
    # When the request is answered elsewhere (another tab) and the page is opened again
    mind.person.call("POST", f"/oauth/requests/{app.request_id}", {"approve": False})
    console.page.reload()
    console.wait_heading("This request can no longer be answered")
    # Then the API's 404 is shown in its words, and what to do
    expect(console.page.get_by_role("alert")).to_contain_text("No such authorization request")
    expect(console.page.get_by_text("A request to connect lasts 10 minutes")).to_be_visible()


def test_signing_in_through_the_hosted_ui_comes_back_to_the_consent_page(
    console: Console, runner: RunningService
) -> None:
    # Given an app's request, and a person signed out in a console with a hosted UI
    app = App(runner)
    HostedUi(console.page, runner)
    console.page.goto(app.consent_url)
    console.page.wait_for_selector("body[data-ready=true]")
    # When they sign in through the hosted UI (which returns to /console?code=…, without the #/…)
    console.page.get_by_role("button", name="Sign in", exact=True).click()
    # Then they are back on the consent page of that request, and the code left the address bar
    console.wait_heading(f"{APP} wants to use a mind of yours")
    assert console.page.url == app.consent_url
    assert console.page.evaluate("() => sessionStorage.getItem('synapse.console.return')") is None


def test_connected_apps_are_listed_and_revoked_and_critical_writes_set(
    console: Console, runner: RunningService, mind: Mind
) -> None:
    # Given an app connected to the mind with read and write, which has used its token once
    app = App(runner)
    tokens = app.connected_to(mind, ["read", "write"])
    assert mcp_status(runner, tokens["access_token"]) == 200
    # When the person opens the mind's Access page
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/access", f"Access to {mind.name}")
    # Then the app is listed with where it sends back to, its scopes, and when it was last used
    row = console.page.get_by_role("row", name=APP)
    expect(row).to_contain_text("127.0.0.1:9")
    expect(row).to_contain_text("read, write")
    expect(row).not_to_contain_text("never")
    console.assert_accessible("access with a connected app")
    console.screenshot("connected-apps", show="#apps-title")
    # When they revoke it, confirming
    row.get_by_role("button", name="Revoke").click()
    dialog = console.page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Disconnect {APP}?")
    dialog.get_by_role("button", name="Revoke").click()
    # Then it leaves the list, its token is refused at once, and the audit names both changes
    expect(console.page.get_by_role("row", name=APP)).to_have_count(0)
    expect(console.page.get_by_text("No app is connected.")).to_be_visible()
    assert mcp_status(runner, tokens["access_token"]) == 401
    audit = console.page.locator("ol.audit")
    expect(audit).to_contain_text(f"grant.revoked app “{APP}”")
    expect(audit).to_contain_text(f"grant.created app “{APP}” (read, write)")
    # When they set that agents may not make a memory critical
    expect(
        console.page.get_by_label("Allow: an agent's critical memory is stored as critical (default)")
    ).to_be_checked()
    console.page.get_by_label("Deny: refuse an agent's write that makes a memory critical").check()
    console.page.get_by_role("button", name="Save critical setting").click()
    # Then the mind's setting says so, and an agent's critical write is refused
    expect(console.page.locator("#status")).to_have_text("Setting saved.")
    settings = mind.person.call("GET", f"/minds/{mind.id}").json()["settings"]
    assert settings["agent_writes_critical"] == "deny"
    refused = mind.agent.call(
        "POST", "/memory", {"category": "note", "key": "k", "content": "c", "priority": "critical"}
    )
    assert refused.status_code == 403, refused.text
