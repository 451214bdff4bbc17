"""A write in the review queue shows the older memories it may replace (issue 42 item 7): the memory
its write's `similar` named (GET /memory/{id}/similar), with its key, content and date, and one
action, Mark as replaced, which the person's PUT `supersedes` applies at once. axe-core checks the
card (light and dark, desktop and 360 px); it is screenshotted."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Locator, expect
from synapse.core.settings import DEV_JWT_SECRET

from infra.token import mint
from tests.browser.conftest import Agent, Console, Mind, accessible_everywhere
from tests.support.runner import RunningService


def _queue_item(console: Console, key: str) -> Locator:
    return console.page.locator(
        "li.item", has=console.page.get_by_role("heading", level=2, name=key, exact=True)
    )


def _wait_until_indexed(mind: Mind, memory_id: str, word: str) -> None:
    deadline = time.monotonic() + 90  # the stream pump indexes it; slow on a loaded machine
    while memory_id not in {
        r["memory"]["id"] for r in mind.person.call("GET", "/memory/search", q=word).json()["results"]
    }:
        assert time.monotonic() < deadline, "the search index did not take the memory in"
        time.sleep(0.3)


def _an_update_and_the_fact_it_replaces(
    mind: Mind, writer: Agent | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A fact (the agent's, or the writer's), indexed, then the agent's update under another key,
    indexed too (so the older fact's own look-up finds the newer one, and must not offer it)."""
    older = (writer or mind.agent).store(
        "fact", "employer", "Works at Acme as an engineer", occurred_at="2024-03-01"
    )
    _wait_until_indexed(mind, older["id"], "Acme")
    newer = mind.agent.store("fact", "new_employer", "Now works at Globex as a manager")
    assert [(s["id"], s["relation"]) for s in newer["similar"]] == [(older["id"], "related")], newer
    _wait_until_indexed(mind, newer["id"], "Globex")
    return older, newer


def test_a_write_shows_the_older_memory_it_may_replace_and_marks_it_replaced(
    console: Console, mind: Mind
) -> None:
    # Given an agent's update of a fact, both waiting for review
    older, newer = _an_update_and_the_fact_it_replaces(mind)
    # When the person opens the queue
    console.sign_in()
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")
    # Then the newer write's card shows the older memory: its key, content, relation and date
    card = _queue_item(console, "fact / new_employer")
    offered = card.get_by_role("region", name="May replace an older memory")
    expect(offered.get_by_role("link", name="fact / employer")).to_have_attribute(
        "href", f"#/memory/{older['id']}"
    )
    expect(offered.locator("p.snippet")).to_have_text("Works at Acme as an engineer")
    expect(offered.locator("p.meta")).to_contain_text("same subject")
    expect(offered.locator("p.meta time").first).to_have_attribute("datetime", older["created_at"])
    expect(offered.locator("p.meta time").nth(1)).to_have_attribute("datetime", "2024-03-01")
    # And the older fact's own card offers nothing: the newer one is not what it replaces
    older_card = _queue_item(console, "fact / employer")
    expect(older_card.locator("section.replaces")).to_have_count(0)
    expect(older_card).not_to_contain_text("null")
    accessible_everywhere(console, "queue, a write that may replace an older memory")
    console.screenshot("queue-replaces", show="section.replaces")

    # When the person marks the older memory replaced
    offered.get_by_role("button", name="Mark as replaced").click()
    # Then both cards leave the queue: the newer is verified by the person's write, the older replaced
    expect(console.page.get_by_text("Nothing waits for review.")).to_be_visible()
    expect(console.page.locator("#queue-count")).to_have_text("0")
    expect(console.page.locator("#status")).to_have_text(
        "Marked fact / employer as replaced by new_employer, and verified new_employer."
    )
    # And the API agrees: the older memory is kept, marked replaced by the newer
    kept = mind.person.call("GET", f"/memory/{older['id']}").json()
    assert (kept["superseded_by"], kept["content"]) == (newer["id"], "Works at Acme as an engineer")
    assert mind.person.call("GET", f"/memory/{newer['id']}").json()["verified"] is True
    # And its page says so, linking to the newer memory
    console.go(f"#/memory/{older['id']}", "fact / employer")
    expect(console.page.locator("[data-field=replaced-by]")).to_contain_text("fact / new_employer")


def _an_editor_signed_in(console: Console, mind: Mind, runner: RunningService) -> None:
    """Eddie, invited to the mind as an editor, signs in with his own JWT (pasted) and shows it."""
    token = mint(DEV_JWT_SECRET, "eddie", 3600)
    invited = mind.person.call(
        "POST", f"/minds/{mind.id}/invitations", {"role": "editor", "user_id": "eddie"}
    )
    assert invited.status_code == 201, invited.text
    accepted = Agent(runner.url, token).call(
        "POST", "/invitations/accept", {"token": invited.json()["token"]}
    )
    assert accepted.status_code == 200, accepted.text
    console.open()
    console.page.get_by_label("JWT (kept in this tab only)").fill(token)
    console.page.get_by_role("button", name="Use this token").click()
    console.page.wait_for_selector("body:not(.signed-out) main h1")
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")


def test_an_editors_mark_of_a_verified_memory_waits_for_a_reviewer(
    console: Console, mind: Mind, runner: RunningService
) -> None:
    # Given a fact the person verified, and an agent's update of it waiting for review
    older, newer = _an_update_and_the_fact_it_replaces(mind, writer=mind.person)
    # When an editor opens the queue
    _an_editor_signed_in(console, mind, runner)
    # Then the update's card offers the verified fact, saying a reviewer decides
    card = _queue_item(console, "fact / new_employer")
    offered = card.get_by_role("region", name="May replace an older memory")
    expect(offered).to_contain_text("a verified one waits for a reviewer")
    expect(offered.locator("p.meta .badge.ok")).to_have_text("verified")
    # When the editor marks it replaced
    offered.get_by_role("button", name="Mark as replaced").click()
    # Then the card stays (an editor's write is unverified) and says the mark waits for a reviewer
    said = "Proposed fact / employer as replaced by new_employer: it is verified, so a reviewer decides."
    expect(card.locator("p.marked")).to_have_text(said)
    expect(card.get_by_role("button", name="Mark as replaced")).to_have_count(0)
    console.assert_accessible("queue, an editor's mark proposed")
    # And the API agrees: the fact is not replaced yet, a proposal to replace it waits
    assert mind.person.call("GET", f"/memory/{older['id']}").json()["superseded_by"] is None
    waiting = mind.person.call("GET", "/proposals", status="pending").json()["proposals"]
    assert [(p["memory_id"], p["action"], p["superseded_by"]) for p in waiting] == [
        (older["id"], "supersede", newer["id"])
    ]
    # And after a reload the queue shows that proposal for what it is, for a reviewer to decide
    console.page.reload()
    console.wait_heading("Review queue")
    proposal = _queue_item(console, "fact / employer")
    expect(proposal.locator("p.kind")).to_have_text("proposed replacement")
    expect(proposal.get_by_role("link", name="a newer memory")).to_have_attribute(
        "href", f"#/memory/{newer['id']}"
    )
    expect(proposal).to_contain_text("A reviewer or an owner accepts or rejects it.")
    console.assert_accessible("queue, a proposed replacement")
