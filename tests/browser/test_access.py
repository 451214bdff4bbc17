"""The console's recall preview, minds, keys, hooks, webhooks and the mind setting in a real
browser; axe-core on every page (light and dark); the page's security headers; its first-load
weight and time to interactive."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time

import pytest
import requests
from playwright.sync_api import BrowserContext, Locator, expect

from tests.browser.conftest import DESKTOP, PHONE, Console, HostedUi, Mind
from tests.support.runner import RunningService

PAGES = [
    ("#/queue", "Review queue"),
    ("#/browse", "Browse and search"),
    ("#/browse?q=tea", "Browse and search"),
    ("#/expiring", "Expiring soon"),
    ("#/recall", "Recall preview"),
    ("#/minds", "Minds"),
]
FIRST_LOAD_BUDGET = 120_000  # bytes of the console's own files (HTML, CSS, JS, icon), uncompressed


@pytest.fixture
def runner(hosted_ui_runner: RunningService) -> RunningService:
    """The console here offers a hosted UI too (a stand-in the browser's routes answer)."""
    return hosted_ui_runner


def test_signing_in_through_the_hosted_ui_uses_the_code_flow_with_pkce(
    console: Console, runner: RunningService
) -> None:
    # Given a hosted UI (answered here) that checks the PKCE pair and hands out the runner's JWT
    hosted = HostedUi(console.page, runner)
    asked = hosted.asked
    # When the person chooses "Sign in" (the hosted UI) on the sign-in page
    console.open()
    console.page.get_by_role("button", name="Sign in", exact=True).click()
    # Then the console asked for a code with an S256 challenge, came back signed in, and the code
    # left the address bar; the token is in sessionStorage only
    console.wait_heading("Review queue")
    assert asked["response_type"] == "code" and asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == f"{runner.url}/console"
    assert "code=" not in console.page.url
    assert console.page.evaluate("() => sessionStorage.getItem('synapse.console.token')") == runner.jwt
    assert console.page.evaluate("() => localStorage.length") == 0


def test_recall_preview_shows_exactly_the_text_the_api_gives_an_agent(console: Console, mind: Mind) -> None:
    # Given a mind with memories in several categories
    mind.person.store("identity", "user_name", "Alex Example", priority="critical", tags=["person"])
    mind.agent.store("fact", "home_city", "Lives in Lisbon", tags=["place"])
    mind.agent.store("fact", "pets", "Has a cat called Miso", tags=["home"])
    mind.agent.store("project", "thesis", "Writing a thesis on tidal energy", priority="high")
    # When the person opens the recall preview, picks the fact category and a smaller budget
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/recall", "Recall preview")
    console.page.get_by_label("fact", exact=True).check()
    console.page.get_by_label("Most characters (max_chars)").fill("1")  # the second step: 1,000
    text = console.page.get_by_label("Recall text")
    expect(text).to_have_attribute("data-query", "category=fact&max_chars=1000")
    # Then the text shown is the API's, byte for byte
    expected = mind.agent.call("GET", "/memory/recall", category="fact", max_chars=1000).text
    assert text.text_content() == expected
    assert "Lives in Lisbon" in expected and "tidal" not in expected
    # And with every category, too
    console.page.get_by_label("fact", exact=True).uncheck()
    expect(text).to_have_attribute("data-query", "max_chars=1000")
    assert text.text_content() == mind.agent.call("GET", "/memory/recall", max_chars=1000).text
    console.assert_accessible()
    console.screenshot("recall")


def test_recall_preview_for_a_message_sends_it_as_q(console: Console, mind: Mind) -> None:
    # Given a critical memory, a high one and a low one about coffee, indexed
    mind.person.store("identity", "user_name", "Alex Example", priority="critical")
    mind.agent.store("fact", "home_city", "Lives in Lisbon", priority="high")
    mind.agent.store("preference", "coffee_order", "An oat flat white coffee", priority="low")
    deadline = time.monotonic() + 90
    while not mind.agent.call("GET", "/memory/search", q="coffee").json()["results"]:
        assert time.monotonic() < deadline, "the search index did not take the memory in"
        time.sleep(0.3)
    message = "What coffee does he drink?"
    # When the person types the user's message into the recall preview
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/recall", "Recall preview")
    console.page.get_by_label("For this message (optional)").fill(message)
    # Then the console asks for the recall for it (q) and shows the API's text byte for byte
    text = console.page.get_by_label("Recall text")
    expect(text).to_have_attribute("data-query", "q=What+coffee+does+he+drink%3F&max_chars=400000")
    expected = mind.agent.call("GET", "/memory/recall", q=message).text
    assert text.text_content() == expected
    placed = mind.agent.call("GET", "/memory/recall", q=message, format="json").json()
    if "relevant" in placed:  # a server with recall's q: the coffee memory right after the critical one
        assert expected.index("user_name") < expected.index("coffee_order") < expected.index("home_city")
    console.assert_accessible()


def test_a_read_only_key_is_shown_once_listed_with_its_scope_and_revoked(
    console: Console, context: BrowserContext, mind: Mind
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    # Given the access page of a mind
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/access", f"Access to {mind.name}")
    # When the person creates a key with the read scope alone
    console.page.get_by_label("Label", exact=True).fill("reader")
    console.page.get_by_label("write", exact=True).uncheck()
    console.page.get_by_label("delete", exact=True).uncheck()
    console.page.get_by_role("button", name="Create key").click()
    # Then the key is shown once, with a copy button that copies it
    shown = console.page.get_by_label("Mind Key", exact=True)
    expect(shown).to_have_value(re.compile(r"^mk_"))
    key = shown.input_value()
    assert key.startswith("mk_")
    console.assert_accessible()
    console.page.get_by_role("button", name="Copy").click()
    assert console.page.evaluate("() => navigator.clipboard.readText()") == key
    # And once dismissed, the page never shows it again; the list has the key with its scope
    console.page.get_by_role("button", name="I have stored it").click()
    row = console.page.get_by_role("row", name="reader")
    expect(row).to_contain_text("read")
    expect(row).not_to_contain_text("write")
    assert key not in console.page.content()
    # And the key reads but cannot write
    reader = requests.Session()
    reader.headers["Authorization"] = f"Bearer {key}"
    assert reader.get(f"{console.url}/memory/recall", timeout=30).status_code == 200
    stored = reader.post(
        f"{console.url}/memory", json={"category": "note", "key": "x", "content": "y"}, timeout=30
    )
    assert stored.status_code == 403, stored.text
    # When the person revokes it, confirming
    row.get_by_role("button", name="Revoke").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    # Then it leaves the list, and the audit names both changes
    expect(console.page.get_by_role("row", name="reader")).to_have_count(0)
    audit = console.page.locator("ol.audit")
    expect(audit).to_contain_text("key.revoked key “reader”")
    expect(audit).to_contain_text("key.created key “reader” (read)")
    assert reader.get(f"{console.url}/memory/recall", timeout=30).status_code == 401


def _mind_row(console: Console, name: str) -> Locator:
    """The minds table's row whose header is the mind `name` (then its id)."""
    header = console.page.locator("th", has_text=re.compile(rf"^{name}\s*m_"))
    return console.page.locator("tbody tr", has=header)


def test_minds_are_created_renamed_and_deleted_only_with_the_name_typed(console: Console) -> None:
    # Given the minds page
    console.sign_in()
    console.go("#/minds", "Minds")
    # When the person creates a mind and renames it
    console.page.get_by_label("Name", exact=True).fill("Scratch mind")
    console.page.get_by_role("button", name="Create mind").click()
    row = _mind_row(console, "Scratch mind")
    expect(row).to_have_count(1)
    row.get_by_label("New name for Scratch mind").fill("Scratch pad")
    row.get_by_role("button", name="Rename").click()
    row = _mind_row(console, "Scratch pad")
    expect(row).to_have_count(1)
    console.assert_accessible()
    # When they delete it: the dialog's button works only once the name is typed
    row.get_by_role("button", name="Delete…").click()
    dialog = console.page.get_by_role("dialog")
    confirm = dialog.get_by_role("button", name="Delete mind")
    expect(confirm).to_be_disabled()
    console.assert_accessible()
    dialog.get_by_label("Type Scratch pad to confirm").fill("Scratch pa")
    expect(confirm).to_be_disabled()
    dialog.get_by_label("Type Scratch pad to confirm").fill("Scratch pad")
    confirm.click()
    # Then it is gone
    expect(_mind_row(console, "Scratch pad")).to_have_count(0)


def test_hooks_webhooks_and_the_setting_for_agent_writes(console: Console, mind: Mind) -> None:
    # Given a mind with an inbound hook and a webhook that has been pinged
    hook = mind.person.call("POST", f"/minds/{mind.id}/hooks", {"label": "voice-bot"})
    assert hook.status_code == 201, hook.text
    webhook = mind.person.call(
        "POST", f"/minds/{mind.id}/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["memory.created"]}
    )
    assert webhook.status_code == 201, webhook.text
    mind.person.call("POST", f"/minds/{mind.id}/webhooks/{webhook.json()['id']}/test")
    # When the person opens the access page
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/access", f"Access to {mind.name}")
    # Then the hook and the webhook are listed, and the webhook's recent deliveries open
    expect(console.page.get_by_role("row", name="voice-bot")).to_have_count(1)
    console.page.get_by_role("button", name="Recent deliveries").click()
    expect(console.page.locator(".deliveries")).not_to_be_empty()
    console.assert_accessible()
    # When they switch agent writes to verified memories to "apply and unverify"
    console.page.get_by_label("Apply: take the agent's change and mark the memory unverified").check()
    console.page.get_by_role("button", name="Save setting").click()
    # Then the mind's setting says so
    expect(console.page.locator("#status")).to_have_text("Setting saved.")
    settings = mind.person.call("GET", f"/minds/{mind.id}").json()["settings"]
    assert settings["agent_writes_to_verified"] == "unverify"


def _accessible_at_both_sizes(console: Console, where: str) -> None:
    for name, size in (("desktop", DESKTOP), ("360 px", PHONE)):
        console.page.set_viewport_size(size)
        console.assert_accessible(f"{where}, {name}")
    console.page.set_viewport_size(DESKTOP)


def test_hooks_and_webhooks_are_created_on_the_page_with_their_secrets_shown_once(
    console: Console, context: BrowserContext, mind: Mind
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    # Given the access page of a new mind
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/access", f"Access to {mind.name}")
    # Then its audit already names the mind's first key, made with the mind
    audit = console.page.locator("ol.audit")
    expect(audit).to_contain_text("key.created key “default” (read, write, delete)")
    # When the person creates an inbound hook
    console.page.get_by_label("Hook label").fill("voice-bot")
    console.page.get_by_role("button", name="Create hook").click()
    # Then its signing secret is shown once, with a copy button that copies it, and its URL
    shown = console.page.get_by_label("Hook signing secret", exact=True)
    expect(shown).to_have_value(re.compile(r"^whsec_"))
    secret = shown.input_value()
    once = console.page.get_by_role("group", name="Hook “voice-bot”")
    hook_url = once.locator("code").inner_text()
    assert hook_url.startswith(f"{console.url}/hooks/hook_")
    _accessible_at_both_sizes(console, "a hook's secret shown once")
    console.screenshot("access-hook", show="#hooks-title")
    console.page.get_by_role("button", name="Copy").click()
    assert console.page.evaluate("() => navigator.clipboard.readText()") == secret
    # And once dismissed it is gone for good; the hook is listed, and takes memories signed with it
    console.page.get_by_role("button", name="I have stored it").click()
    expect(console.page.get_by_role("row", name="voice-bot")).to_have_count(1)
    assert secret not in console.page.content()
    body = json.dumps({"category": "note", "key": "from_the_hook", "content": "Posted by the voice bot"})
    stamp = int(time.time())
    signed = hmac.new(secret.encode(), f"{stamp}.{body}".encode(), hashlib.sha256).hexdigest()
    delivered = requests.post(
        hook_url,
        data=body,
        headers={"Content-Type": "application/json", "Synapse-Signature": f"t={stamp},v1={signed}"},
        timeout=30,
    )
    assert delivered.status_code in (200, 201), delivered.text
    # When they create a webhook for created memories and proposals
    console.page.get_by_label("Endpoint URL").fill("http://127.0.0.1:9/synapse")
    for name in ("memory.updated", "memory.verified", "memory.deleted", "memory.expiring"):
        console.page.get_by_label(name, exact=True).uncheck()
    console.page.get_by_label("proposal.created", exact=True).check()
    console.page.get_by_role("button", name="Create webhook").click()
    # Then its signing secret is shown once too, and it is listed with those events
    shown = console.page.get_by_label("Webhook signing secret", exact=True)
    expect(shown).to_have_value(re.compile(r"^whsec_"))
    secret = shown.input_value()
    _accessible_at_both_sizes(console, "a webhook's secret shown once")
    console.page.get_by_role("button", name="I have stored it").click()
    listed = console.page.locator("li.item", has_text="http://127.0.0.1:9/synapse")
    expect(listed).to_contain_text("events: memory.created, proposal.created")
    assert secret not in console.page.content()
    (webhook,) = mind.person.call("GET", f"/minds/{mind.id}/webhooks").json()["webhooks"]
    assert webhook["events"] == ["memory.created", "proposal.created"]
    # And the audit names both
    expect(audit).to_contain_text("hook.created hook “voice-bot”")
    expect(audit).to_contain_text("webhook.created webhook http://127.0.0.1:9/synapse")
    # When they revoke the hook and delete the webhook, confirming each
    console.page.get_by_role("row", name="voice-bot").get_by_role("button", name="Revoke").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(console.page.get_by_role("row", name="voice-bot")).to_have_count(0)
    listed.get_by_role("button", name="Delete").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(console.page.locator("li.item", has_text="http://127.0.0.1:9/synapse")).to_have_count(0)
    # Then both are gone, the hook refuses what is signed with its secret, and the audit says so
    assert mind.person.call("GET", f"/minds/{mind.id}/webhooks").json()["webhooks"] == []
    assert (
        requests.post(hook_url, data=body, headers=delivered.request.headers, timeout=30).status_code == 401
    )
    expect(audit).to_contain_text("hook.revoked hook “voice-bot”")
    expect(audit).to_contain_text("webhook.deleted webhook http://127.0.0.1:9/synapse")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_has_no_axe_violations(console: Console, mind: Mind, scheme: str) -> None:
    # Given a mind with a memory on every list
    made = mind.agent.store("preference", "drink", "Drinks tea", expires_at="2099-01-01T00:00:00Z")
    console.page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
    console.sign_in()
    console.choose_mind(mind.id)
    # When each page is shown, then axe-core finds nothing
    for route, heading in [*PAGES, (f"#/memory/{made['id']}", "preference / drink"), ("#/access", None)]:
        console.go(route, heading or f"Access to {mind.name}")
        console.assert_accessible(route)


def test_the_page_has_strict_headers_and_nothing_outside_its_folder_is_served(
    runner: RunningService,
) -> None:
    # When the console's page and a script are fetched
    page = requests.get(f"{runner.url}/console", timeout=30)
    script = requests.get(f"{runner.url}/console/app.js", timeout=30)
    # Then each has its type, a strict CSP without inline code, nosniff and revalidation
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    policy = page.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self';" in policy and "unsafe" not in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Cache-Control"] == "no-cache"
    again = requests.get(
        f"{runner.url}/console/app.js", headers={"If-None-Match": script.headers["ETag"]}, timeout=30
    )
    assert again.status_code == 304
    # And paths outside the folder, hidden or unknown files are 404s
    for path in ("/console/%2e%2e/template.yaml", "/console/../app.py", "/console/.hidden", "/console/x.py"):
        assert requests.get(runner.url + path, timeout=30).status_code == 404, path
    # And the local runner offers the dev sign-in
    config = requests.get(f"{runner.url}/console/config.json", timeout=30).json()
    assert config["dev_signin"] is True


def test_first_load_weight_and_time_to_interactive(console: Console, mind: Mind) -> None:
    # Given a signed-in tab (the token in sessionStorage) and a mind with a few queued memories
    for index in range(3):
        mind.agent.store("note", f"note_{index}", f"Note number {index}")
    console.sign_in()
    console.choose_mind(mind.id)
    # When the console is loaded afresh (no cache) into its review queue
    client = console.page.context.new_cdp_session(console.page)
    client.send("Network.enable")
    client.send("Network.setCacheDisabled", {"cacheDisabled": True})
    console.page.reload()
    console.wait_heading("Review queue")
    # (the queue's heading can show before boot() has set its "console-ready" mark)
    console.page.locator("body[data-ready='true']").wait_for(state="attached")
    figures = console.page.evaluate(
        """() => {
            const entries = [...performance.getEntriesByType("navigation"),
                             ...performance.getEntriesByType("resource")];
            const own = entries.filter(e => new URL(e.name).pathname.startsWith("/console"));
            const api = entries.filter(e => !new URL(e.name).pathname.startsWith("/console"));
            const sum = list => list.reduce((n, e) => n + e.transferSize, 0);
            const ready = performance.getEntriesByName("console-ready")[0];
            return {files: own.length, file_bytes: sum(own), api_requests: api.length, api_bytes: sum(api),
                    interactive_ms: Math.round(ready.startTime)};
        }"""
    )
    # Then the console's own files stay within the budget (the figures are in docs/console.md)
    print("console first load:", json.dumps(figures))
    assert figures["file_bytes"] <= FIRST_LOAD_BUDGET, figures


def test_the_address_the_banner_prints_opens_the_console(console: Console, runner: RunningService) -> None:
    # Given the URL `make run` prints, When a person opens it in a browser
    console.page.goto(f"{runner.url}/")
    console.page.wait_for_selector("body[data-ready=true]")
    # Then they are on the console's sign-in page, not a JSON 404
    assert console.page.url == f"{runner.url}/console"
    expect(console.page.get_by_role("button", name="Sign in as local-user")).to_be_visible()
