"""A mind shared by a team, in a real browser (docs/console.md, "Members and invitations"): an owner
invites by user id (the link shown once, copied) and by email, the invited person opens the link
signed out, signs in and accepts in a second browser context, or declines; a revoked invitation is
explained; roles are changed, a member removed, ownership transferred, and the last owner cannot
leave; each role sees only the buttons it may use. axe-core on every page, light and dark, at the
desktop and 360 px viewports."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl

import jwt
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect
from synapse.core.settings import DEV_JWT_SECRET

from infra.token import mint
from tests.browser.conftest import DESKTOP, Agent, Console, HostedUi, Mind, accessible_everywhere
from tests.support.runner import RunningService

OWNER = "local-user"  # the runner's dev user, whom Console.sign_in signs in


@pytest.fixture
def runner(hosted_ui_runner: RunningService) -> RunningService:
    """The console here offers a hosted UI too (a stand-in the browser's routes answer)."""
    return hosted_ui_runner


class Person:
    """Someone other than the dev user, with their own JWT (signed with the runner's dev secret)."""

    def __init__(self, runner: RunningService, user_id: str, email: str | None = None) -> None:
        self.user_id = user_id
        if email:  # as Cognito or an OIDC provider signs it: the email, verified
            claims = {"sub": user_id, "iat": int(time.time()), "exp": int(time.time()) + 3600}
            claims |= {"email": email, "email_verified": True}
            self.token = jwt.encode(claims, DEV_JWT_SECRET, algorithm="HS256")
        else:
            self.token = mint(DEV_JWT_SECRET, user_id, 3600)
        self.api = Agent(runner.url, self.token)


@pytest.fixture
def other_tab(browser: Browser, runner: RunningService) -> Iterator[Console]:
    """A second browser context (its own sessionStorage): the invited person's tab."""
    fresh = browser.new_context(viewport=DESKTOP, color_scheme="light", locale="en-GB", timezone_id="UTC")
    tab = Console(fresh.new_page(), runner.url)
    yield tab
    fresh.close()
    assert tab.problems == [], tab.problems


def invite(mind: Mind, role: str, **who: str) -> dict[str, Any]:
    made = mind.person.call("POST", f"/minds/{mind.id}/invitations", {"role": role, **who})
    assert made.status_code == 201, made.text
    answer: dict[str, Any] = made.json()
    return answer


def join(mind: Mind, person: Person, role: str) -> None:
    """The person is a member of the mind with the role (invited and accepted through the API)."""
    token = invite(mind, role, user_id=person.user_id)["token"]
    accepted = person.api.call("POST", "/invitations/accept", {"token": token})
    assert accepted.status_code == 200, accepted.text


def roles(mind: Mind) -> dict[str, str]:
    listed = mind.person.call("GET", f"/minds/{mind.id}/members")
    assert listed.status_code == 200, listed.text
    return {m["user_id"]: m["role"] for m in listed.json()["members"]}


def pending(mind: Mind) -> list[dict[str, Any]]:
    listed = mind.person.call("GET", f"/minds/{mind.id}/invitations")
    assert listed.status_code == 200, listed.text
    found: list[dict[str, Any]] = listed.json()["invitations"]
    return found


def sign_in_with(tab: Console, person: Person) -> None:
    """On the sign-in page: paste the person's JWT (as on a stack without a hosted UI)."""
    tab.page.get_by_label("JWT (kept in this tab only)").fill(person.token)
    tab.page.get_by_role("button", name="Use this token").click()
    tab.page.wait_for_selector("body:not(.signed-out) main h1")


def open_members(console: Console, mind: Mind) -> None:
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/members", f"Members of {mind.name}")


def test_an_owner_invites_by_user_id_and_sees_the_link_once(
    console: Console, context: BrowserContext, mind: Mind, runner: RunningService
) -> None:
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    # Given the owner on the mind's Members page
    open_members(console, mind)
    # Then they are listed as its owner, and the page says what an owner may do
    mine = console.page.get_by_role("row", name=re.compile(rf"^{OWNER} \(you\)"))
    expect(mine.get_by_label(f"Role of {OWNER}")).to_have_value("owner")
    expect(console.page.get_by_text("You are an owner here")).to_be_visible()
    accessible_everywhere(console, "members")
    # When they invite the user id sam as a reviewer
    console.page.get_by_label("User id", exact=True).check()
    console.page.get_by_label("Their user id").fill("sam")
    console.page.get_by_label("Role", exact=True).select_option("reviewer")
    expect(console.page.get_by_text("A reviewer may read, write, verify")).to_be_visible()
    console.page.get_by_role("button", name="Create invitation link").click()
    # Then the link is shown once, with a copy button that copies it
    shown = console.page.get_by_label("Invitation link")
    expect(shown).to_have_value(re.compile(r"#/accept\?token="))
    link = shown.input_value()
    assert link.startswith(f"{runner.url}/console")
    expect(console.page.get_by_role("heading", name="Invitation for sam as reviewer")).to_be_visible()
    accessible_everywhere(console, "members, the link shown")
    console.screenshot("members-invite", show="#invite-title")
    console.page.get_by_role("button", name="Copy").click()
    assert console.page.evaluate("() => navigator.clipboard.readText()") == link
    # And once dismissed the page never shows it again; the invitation is pending, for sam, reviewer
    console.page.get_by_role("button", name="I have sent it").click()
    row = console.page.get_by_role("row", name=re.compile(r"^sam"))
    expect(row).to_contain_text("reviewer")
    assert link.split("token=")[1] not in console.page.content()
    assert [(i["user_id"], i["role"]) for i in pending(mind)] == [("sam", "reviewer")]
    console.screenshot("members")
    # When they invite an email address as a viewer (the role preselected)
    console.page.get_by_label("Email", exact=True).check()
    console.page.get_by_label("Their email").fill("ana@example.com")
    expect(console.page.get_by_label("Role", exact=True)).to_have_value("viewer")
    console.page.get_by_role("button", name="Create invitation link").click()
    # Then its link is shown, for that email, and both invitations are pending
    shown_for = console.page.get_by_role("heading", name="Invitation for ana@example.com as viewer")
    expect(shown_for).to_be_visible()
    console.page.get_by_role("button", name="I have sent it").click()
    expect(console.page.get_by_role("row", name=re.compile(r"^ana@example\.com"))).to_contain_text("viewer")
    invited = {(i["email"] or i["user_id"], i["role"]) for i in pending(mind)}
    assert invited == {("sam", "reviewer"), ("ana@example.com", "viewer")}


class CognitoLike(HostedUi):
    """A hosted UI that signs `person` in as Cognito does: an access token without the email, and an
    id token with it, verified."""

    def __init__(self, page: Page, runner: RunningService, user_id: str, email: str) -> None:
        super().__init__(page, runner)
        self.access = Person(runner, user_id).token
        self.id_token = Person(runner, user_id, email=email).token

    def _token(self, route: Route) -> None:
        form = dict(parse_qsl(route.request.post_data or ""))
        digest = hashlib.sha256(form["code_verifier"].encode()).digest()
        assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == self.asked["code_challenge"]
        route.fulfill(
            json={"access_token": self.access, "id_token": self.id_token, "token_type": "Bearer"},
            headers={"Access-Control-Allow-Origin": self.runner.url},
        )


def test_signing_in_through_the_hosted_ui_comes_back_to_the_invitation_and_accepts_by_email(
    other_tab: Console, runner: RunningService, mind: Mind
) -> None:
    # Given an invitation for cara@example.com, opened signed out in a console with a hosted UI
    link = invite(mind, "viewer", email="cara@example.com")["link"]
    CognitoLike(other_tab.page, runner, "cara-sub", "cara@example.com")
    other_tab.page.goto(link)
    other_tab.page.wait_for_selector("body[data-ready=true]")
    # When the person signs in there (the hosted UI returns to /console?code=…, without the #/…)
    other_tab.page.get_by_role("button", name="Sign in", exact=True).click()
    # Then they are back on that invitation, and the code left the address bar
    other_tab.wait_heading(f"You are invited to {mind.name}")
    assert other_tab.page.url == link
    assert other_tab.page.evaluate("() => sessionStorage.getItem('synapse.console.return')") is None
    # When they accept: the console sends the id token, which carries the email the access token lacks
    other_tab.page.get_by_role("button", name="Accept").click()
    # Then they joined, with that email
    other_tab.wait_heading("Review queue")
    joined = mind.person.call("GET", f"/minds/{mind.id}/members").json()["members"]
    assert [(m["role"], m["email"]) for m in joined if m["user_id"] == "cara-sub"] == [
        ("viewer", "cara@example.com")
    ]


def test_the_invited_person_signs_in_from_the_link_accepts_and_reviews(
    console: Console, other_tab: Console, mind: Mind, runner: RunningService
) -> None:
    # Given an invitation for sam as a reviewer, and a memory an agent stored
    sam = Person(runner, "sam")
    link = invite(mind, "reviewer", user_id=sam.user_id)["link"]
    stored = mind.agent.store("fact", "office", "The office is in Porto")
    # When sam opens the link signed out, and signs in
    other_tab.page.goto(link)
    other_tab.page.wait_for_selector("body[data-ready=true]")
    expect(
        other_tab.page.get_by_text("You have been invited to share a mind: sign in to answer the invitation.")
    ).to_be_visible()
    sign_in_with(other_tab, sam)
    # Then they are back on the invitation: the mind, the role and what it may do, who invited them
    other_tab.wait_heading(f"You are invited to {mind.name}")
    expect(other_tab.page.locator("#offered-role")).to_have_text("reviewer")
    expect(other_tab.page.get_by_text(f"Invited by {OWNER}")).to_be_visible()
    expect(other_tab.page.get_by_text("You are signed in as sam.")).to_be_visible()
    accessible_everywhere(other_tab, "accept")
    other_tab.screenshot("accept")
    # When they accept
    other_tab.page.get_by_role("button", name="Accept").click()
    # Then they are on that mind's queue, the picker names their role, and the token left the address
    other_tab.wait_heading("Review queue")
    assert "token" not in other_tab.page.url
    picker = other_tab.page.get_by_label("Mind", exact=True)
    expect(picker).to_have_value(mind.id)
    expect(picker.locator("option:checked")).to_have_text(f"{mind.name} (reviewer)")
    expect(other_tab.page.locator('#nav a[data-route="access"]')).to_be_hidden()
    # And as a reviewer they verify the agent's memory, and the memory says who did
    item = other_tab.page.locator("li.item", has=other_tab.page.get_by_role("heading", name="fact / office"))
    item.get_by_role("button", name="Verify", exact=True).click()
    expect(item).to_have_count(0)
    verified = mind.person.call("GET", f"/memory/{stored['id']}").json()
    assert verified["verified"] is True and "sam" in json.dumps(verified["verified_by"])
    # And the owner's Members page lists sam as a reviewer, invited by them, and nothing pending
    open_members(console, mind)
    row = console.page.get_by_role("row", name=re.compile(r"^sam"))
    expect(row.get_by_label("Role of sam")).to_have_value("reviewer")
    expect(row).to_contain_text(OWNER)
    expect(console.page.get_by_text("No invitation waits for an answer.")).to_be_visible()


def test_a_revoked_invitation_is_explained_and_a_declined_one_stops_working(
    console: Console, other_tab: Console, mind: Mind, runner: RunningService
) -> None:
    # Given two invitations for ana: one by email, one by user id
    ana = Person(runner, "ana")
    by_email = invite(mind, "viewer", email="ana@example.com")
    by_id = invite(mind, "editor", user_id=ana.user_id)
    # When the owner revokes the one by email on the Members page, confirming
    open_members(console, mind)
    row = console.page.get_by_role("row", name=re.compile(r"^ana@example\.com"))
    expect(row).to_contain_text("viewer")
    row.get_by_role("button", name="Revoke the invitation for ana@example.com").click()
    dialog = console.page.get_by_role("dialog")
    console.assert_accessible("revoke dialog")
    dialog.get_by_role("button", name="Revoke").click()
    # Then it leaves the list, and only the other is pending
    expect(console.page.get_by_role("row", name=re.compile(r"^ana@example\.com"))).to_have_count(0)
    assert [i["id"] for i in pending(mind)] == [by_id["invitation"]["id"]]
    # When ana opens the revoked link and signs in
    other_tab.page.goto(by_email["link"])
    other_tab.page.wait_for_selector("body[data-ready=true]")
    sign_in_with(other_tab, ana)
    # Then the page says it can no longer be answered, in the API's words, and what to do
    other_tab.wait_heading("This invitation can no longer be answered")
    expect(other_tab.page.get_by_role("alert")).not_to_be_empty()
    expect(other_tab.page.get_by_text("ask the person who invited you for a new link")).to_be_visible()
    accessible_everywhere(other_tab, "a revoked invitation")
    # When ana opens the other link and declines
    other_tab.page.goto(by_id["link"])
    other_tab.wait_heading(f"You are invited to {mind.name}")
    other_tab.page.get_by_role("button", name="Decline").click()
    # Then the page says so, the token left the address bar, and the link no longer works
    other_tab.wait_heading("Invitation declined")
    assert "token" not in other_tab.page.url
    other_tab.assert_accessible("declined")
    assert pending(mind) == []
    again = ana.api.call("POST", "/invitations/accept", {"token": by_id["token"]})
    assert again.status_code == 404, again.text
    assert ana.user_id not in roles(mind)


def test_an_invitation_by_email_is_accepted_only_with_that_verified_email(
    other_tab: Console, mind: Mind, runner: RunningService
) -> None:
    # Given an invitation for ana@example.com, opened by ana signed in without an email claim
    link = invite(mind, "editor", email="ana@example.com")["link"]
    other_tab.page.goto(link)
    other_tab.page.wait_for_selector("body[data-ready=true]")
    sign_in_with(other_tab, Person(runner, "ana"))
    other_tab.wait_heading(f"You are invited to {mind.name}")
    expect(other_tab.page.get_by_text("It is for ana@example.com")).to_be_visible()
    # When they accept, the API's 403 is written out and they stay on the invitation
    other_tab.page.get_by_role("button", name="Accept").click()
    refused = other_tab.page.get_by_role("alert")
    expect(refused).to_contain_text("Could not accept: This invitation is for an email address")
    other_tab.assert_accessible("accept refused")
    # When they sign out there and sign in with the account whose verified email it is
    other_tab.page.get_by_role("button", name="Sign out").click()
    sign_in_with(other_tab, Person(runner, "ana-cognito-sub", email="Ana@Example.com"))
    other_tab.wait_heading(f"You are invited to {mind.name}")
    other_tab.page.get_by_role("button", name="Accept").click()
    # Then they joined as an editor, listed with their email
    other_tab.wait_heading("Review queue")
    assert roles(mind)["ana-cognito-sub"] == "editor"
    other_tab.go("#/members", f"Members of {mind.name}")
    row = other_tab.page.get_by_role("row", name=re.compile(r"^ana@example\.com \(you\)", re.IGNORECASE))
    expect(row).to_contain_text("editor")


def test_roles_change_a_member_is_removed_and_ownership_is_transferred(
    console: Console, mind: Mind, runner: RunningService
) -> None:
    # Given kim, an editor, and lee, a viewer
    kim, lee = Person(runner, "kim"), Person(runner, "lee")
    join(mind, kim, "editor")
    join(mind, lee, "viewer")
    open_members(console, mind)
    # When the owner makes kim a viewer
    row = console.page.get_by_role("row", name=re.compile(r"^kim"))
    row.get_by_label("Role of kim").select_option("viewer")
    row.get_by_role("button", name="Change role").click()
    # Then the API says so
    expect(console.page.locator("#status")).to_have_text("kim is now a viewer.")
    console.wait_settled()
    assert roles(mind)["kim"] == "viewer"
    # When they remove lee, confirming
    console.page.get_by_role("button", name="Remove lee…").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Remove").click()
    # Then lee leaves the list, and lee's next request for the mind is refused
    expect(console.page.get_by_role("row", name=re.compile(r"^lee"))).to_have_count(0)
    assert lee.api.call("GET", f"/minds/{mind.id}").status_code == 404
    # When the owner, the only one, tries to leave
    console.page.get_by_role("button", name=f"Leave {mind.name}…").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Leave").click()
    # Then the API refuses, and the page says what to do
    expect(console.page.get_by_role("alert")).to_contain_text("make another member an owner first")
    assert roles(mind)[OWNER] == "owner"
    accessible_everywhere(console, "members, the last owner refused")
    # When they transfer ownership to kim and stay a reviewer
    console.page.get_by_label("New owner").select_option("kim")
    expect(console.page.get_by_label("Your role afterwards")).to_have_value("reviewer")
    console.page.get_by_role("button", name="Transfer ownership…").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Transfer ownership").click()
    # Then kim owns the mind and they review it; their page and menu no longer offer an owner's tools
    console.wait_heading(f"Members of {mind.name}")
    expect(console.page.get_by_text("You are a reviewer here")).to_be_visible()
    assert roles(mind) == {OWNER: "reviewer", "kim": "owner"}
    expect(console.page.get_by_role("button", name="Create invitation link")).to_have_count(0)
    expect(console.page.get_by_label("Role of kim")).to_have_count(0)
    expect(console.page.locator('#nav a[data-route="access"]')).to_be_hidden()
    accessible_everywhere(console, "members, as a reviewer")
    # And they may leave now that kim owns it
    console.page.get_by_role("button", name=f"Leave {mind.name}…").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Leave").click()
    console.wait_heading("Minds")
    assert OWNER not in roles_as(kim, mind)


def roles_as(person: Person, mind: Mind) -> dict[str, str]:
    listed = person.api.call("GET", f"/minds/{mind.id}/members")
    assert listed.status_code == 200, listed.text
    return {m["user_id"]: m["role"] for m in listed.json()["members"]}


def look_again(tab: Console) -> None:
    """Reload the queue (the console reads the person's roles once, when it starts)."""
    tab.go("#/queue", "Review queue")
    tab.page.reload()
    tab.wait_heading("Review queue")


def test_each_role_sees_only_the_actions_it_may_use(
    other_tab: Console, mind: Mind, runner: RunningService
) -> None:
    # Given a mind with an agent's unverified memory and an agent's proposed change to a verified one
    mind.agent.store("fact", "office", "The office is in Porto")
    mind.person.store("fact", "team", "The team is five people")
    proposed = mind.agent.call(
        "POST", "/memory", {"category": "fact", "key": "team", "content": "The team is six people"}
    )
    assert proposed.status_code == 202, proposed.text
    # And vic, a viewer, signed in
    vic = Person(runner, "vic")
    join(mind, vic, "viewer")
    other_tab.open()
    sign_in_with(other_tab, vic)
    other_tab.choose_mind(mind.id)
    other_tab.wait_heading("Review queue")
    page = other_tab.page
    office = page.locator("li.item", has=page.get_by_role("heading", name="fact / office"))
    team = page.locator("li.item", has=page.get_by_role("heading", name="fact / team"))
    # Then the viewer reads the queue but has no button to verify, edit, delete, accept or reject
    expect(page.locator("#mind option:checked")).to_have_text(f"{mind.name} (viewer)")
    expect(page.get_by_text("You are a viewer here")).to_be_visible()
    expect(office).to_contain_text("The office is in Porto")
    expect(office.get_by_role("button")).to_have_count(0)
    expect(team.get_by_role("button", name=re.compile(r"^(Accept|Reject)"))).to_have_count(0)
    expect(team).to_contain_text("A reviewer or an owner accepts or rejects it.")
    expect(page.locator('#nav a[data-route="access"]')).to_be_hidden()
    accessible_everywhere(other_tab, "queue, as a viewer")
    # And the memory's page has no action and no Restore; the Access page says whose it is
    office.get_by_role("link", name="fact / office").click()
    other_tab.wait_heading("fact / office")
    expect(page.locator("main").get_by_role("button")).to_have_count(0)
    other_tab.go("#/access", f"Access to {mind.name}")
    expect(page.get_by_text("Only an owner manages the keys")).to_be_visible()
    # When the owner makes vic an editor and vic looks again
    changed = mind.person.call("PATCH", f"/minds/{mind.id}/members/vic", {"role": "editor"})
    assert changed.status_code == 200, changed.text
    look_again(other_tab)
    # Then vic edits (the change stays unverified, in the queue) but still neither verifies nor decides
    expect(office.get_by_role("button", name="Verify", exact=True)).to_have_count(0)
    expect(team.get_by_role("button", name="Accept")).to_have_count(0)
    office.get_by_role("button", name="Edit", exact=True).click()
    office.get_by_label("Content").fill("The office is in Porto, by the river")
    office.get_by_role("button", name="Save", exact=True).click()
    expect(office).to_contain_text("The office is in Porto, by the river")
    expect(office.get_by_role("button", name="Edit", exact=True)).to_be_focused()
    memories = mind.person.call("GET", "/memory", category="fact").json()["memories"]
    edited = next(m for m in memories if m["key"] == "office")
    assert edited["content"] == "The office is in Porto, by the river" and edited["verified"] is False
    # When the owner makes vic a reviewer
    changed = mind.person.call("PATCH", f"/minds/{mind.id}/members/vic", {"role": "reviewer"})
    assert changed.status_code == 200, changed.text
    look_again(other_tab)
    # Then vic verifies and decides, and still has no Access page
    expect(office.get_by_role("button", name="Verify", exact=True)).to_be_visible()
    expect(team.get_by_role("button", name="Accept")).to_be_visible()
    expect(page.locator("#mind option:checked")).to_have_text(f"{mind.name} (reviewer)")
    expect(page.locator('#nav a[data-route="access"]')).to_be_hidden()
    # When the owner makes vic a viewer again while vic's queue is open, and vic clicks Verify
    changed = mind.person.call("PATCH", f"/minds/{mind.id}/members/vic", {"role": "viewer"})
    assert changed.status_code == 200, changed.text
    office.get_by_role("button", name="Verify", exact=True).click()
    # Then the API's 403 naming the role needed is on the page, and the console reads the role again
    expect(page.get_by_role("alert")).to_contain_text("reviewer")
    expect(page.locator("#mind option:checked")).to_have_text(f"{mind.name} (viewer)")
    other_tab.assert_accessible("queue, a refused verify")
