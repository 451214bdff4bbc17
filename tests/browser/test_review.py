"""The review console's core flows in a real browser: sign in locally, work through the queue
(verify, edit then verify, delete), decide an agent's proposed change, search with highlights (and,
for a question, each hit's matched terms and coverage), and a memory's history with Restore.
axe-core checks each page; the queue and history are screenshotted."""

from __future__ import annotations

import json
import re
import time

from playwright.sync_api import Locator, expect

from tests.browser.conftest import Console, Mind


def _wait_until_indexed(mind: Mind, word: str) -> None:
    deadline = time.monotonic() + 90  # the stream pump indexes it; slow on a loaded machine
    while not mind.person.call("GET", "/memory/search", q=word).json()["results"]:
        assert time.monotonic() < deadline, "the search index did not take the memory in"
        time.sleep(0.3)


def _queue_item(console: Console, key: str) -> Locator:
    return console.page.locator("li.item", has=console.page.get_by_role("heading", name=key))


def test_signing_in_locally_takes_one_click_and_keeps_the_token_in_this_tab(console: Console) -> None:
    # Given the console on the local runner
    console.open()
    # Then it offers the dev sign-in, and the sign-in page passes axe
    expect(console.page.get_by_role("heading", level=1)).to_have_text("Sign in to the Synapse console")
    console.assert_accessible()
    # When the person clicks it
    console.page.get_by_role("button", name="Sign in as local-user").click()
    # Then the review queue opens, and the token is in sessionStorage, never localStorage
    console.wait_heading("Review queue")
    assert console.page.evaluate("() => Boolean(sessionStorage.getItem('synapse.console.token'))")
    assert console.page.evaluate("() => localStorage.length") == 0


def test_memories_an_agent_stored_are_verified_edited_or_deleted_from_the_queue(
    console: Console, mind: Mind
) -> None:
    # Given an agent stored three memories
    first = mind.agent.store("fact", "home_city", "Lives in Berlin", tags=["place"])
    second = mind.agent.store("preference", "coffee", "Drinks tea", priority="high")
    third = mind.agent.store("note", "scratch", "Temporary note")
    # When the person signs in and shows that mind
    console.sign_in()
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")
    # Then all three wait in the queue, newest first, counted in the badge
    headings = console.page.locator("ol.queue li.item h2").all_inner_texts()
    assert headings == ["note / scratch", "preference / coffee", "fact / home_city"]
    expect(console.page.locator("#queue-count")).to_have_text("3")
    console.assert_accessible()

    # When the person verifies the first
    _queue_item(console, "fact / home_city").get_by_role("button", name="Verify", exact=True).click()
    expect(_queue_item(console, "fact / home_city")).to_have_count(0)
    # And edits the second, then verifies it
    item = _queue_item(console, "preference / coffee")
    item.get_by_role("button", name="Edit then verify").click()
    item.get_by_label("Content").fill("Drinks coffee, black")
    item.get_by_role("button", name="Save and verify").click()
    expect(item).to_have_count(0)
    # And deletes the third, confirming in the dialog (keyboard shortcut: x on the focused item)
    _queue_item(console, "note / scratch").focus()
    console.page.keyboard.press("x")
    dialog = console.page.get_by_role("dialog")
    console.assert_accessible()
    dialog.get_by_role("button", name="Delete", exact=True).click()
    # Then the queue is empty and the badge says 0
    expect(console.page.get_by_text("Nothing waits for review.")).to_be_visible()
    expect(console.page.locator("#queue-count")).to_have_text("0")
    # And the API agrees
    verified = mind.person.call("GET", f"/memory/{first['id']}").json()
    edited = mind.person.call("GET", f"/memory/{second['id']}").json()
    assert verified["verified"] is True and verified["content"] == "Lives in Berlin"
    assert edited["verified"] is True and edited["content"] == "Drinks coffee, black"
    assert mind.person.call("GET", f"/memory/{third['id']}").status_code == 404


def test_an_agents_rewrite_of_a_verified_memory_is_a_proposal_the_person_accepts(
    console: Console, mind: Mind
) -> None:
    # Given a verified memory, which an agent then rewrites
    original = mind.person.store("fact", "employer", "Works at Acme as an engineer")
    rewrite = mind.agent.call(
        "POST", "/memory", {"category": "fact", "key": "employer", "content": "Works at Initech as a manager"}
    )
    assert rewrite.status_code == 202, rewrite.text
    # And an unverified memory beside it
    mind.agent.store("skill", "languages", "Speaks German and English", tags=["language"])
    # When the person opens the queue
    console.sign_in()
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")
    # Then the proposal shows its diff: the old words struck, the new ones inserted
    item = _queue_item(console, "fact / employer")
    expect(item.locator("del").first).to_contain_text("Acme")
    expect(item.locator("ins").first).to_contain_text("Initech")
    console.assert_accessible()
    console.screenshot("queue")
    # When they accept it
    item.get_by_role("button", name="Accept", exact=True).click()
    expect(item).to_have_count(0)
    # Then the memory's page shows the new text, verified
    console.go(f"#/memory/{original['id']}", "fact / employer")
    fields = console.page.locator("dl.fields")
    expect(fields).to_contain_text("Works at Initech as a manager")
    expect(fields.locator("dt:text-is('verified') + dd")).to_have_text("yes")


def test_search_finds_a_memory_and_highlights_the_word(console: Console, mind: Mind) -> None:
    # Given a memory the search index has taken in
    mind.agent.store("project", "garden_shed", "Building a cedar garden shed this spring")
    _wait_until_indexed(mind, "cedar")
    # When the person searches for the word
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/browse", "Browse and search")
    console.page.get_by_label("Search").fill("cedar")
    console.page.get_by_role("button", name="Show").click()
    # Then the result shows a snippet with the word marked
    expect(console.page.locator("ol.results mark")).to_have_text(["cedar"])
    expect(console.page.locator("ol.results h2")).to_have_text(["project / garden_shed"])
    console.assert_accessible()


def test_search_by_a_question_shows_the_matched_terms_and_coverage_of_each_hit(
    console: Console, mind: Mind
) -> None:
    # Given an indexed memory about coffee
    mind.agent.store("preference", "coffee_order", "Drinks an oat flat white coffee")
    _wait_until_indexed(mind, "coffee")
    question = "What coffee does he drink?"
    answer = mind.person.call("GET", "/memory/search", q=question).json()
    # When the person searches with a question, in their own words
    console.sign_in()
    console.choose_mind(mind.id)
    console.go("#/browse", "Browse and search")
    box = console.page.get_by_label("Search")
    expect(box).to_have_attribute("placeholder", "a question or keywords")
    box.fill(question)
    console.page.get_by_role("button", name="Show").click()
    # Then the memory is found, and (from a server that reports them) the hit says which of the
    # terms the question was read as it matched, and their share
    expect(console.page.locator("ol.results h2")).to_have_text(["preference / coffee_order"])
    shown = console.page.locator("ol.results .coverage")
    if "coverage" not in answer["results"][0]:  # a server from before best-match search
        expect(shown).to_have_count(0)
    else:
        terms, hit = answer["terms"], answer["results"][0]
        percent = int(hit["coverage"] * 100 + 0.5)
        of = f"{len(hit['matched'])} of {len(terms)} terms ({percent}%)"
        expect(shown).to_have_text([re.compile(re.escape(f"Matched {', '.join(hit['matched'])}: {of}"))])
        expect(console.page.locator(".read-as")).to_have_text(f"Searched for: {', '.join(terms)}.")
    console.assert_accessible()


def test_history_lists_every_change_and_restore_brings_back_version_one(console: Console, mind: Mind) -> None:
    # Given a memory written, verified, then changed twice
    made = mind.agent.store("context", "current_trip", "Travelling to Lisbon in May")
    mind.person.call("POST", f"/memory/{made['id']}/verify")
    mind.person.call("PUT", f"/memory/{made['id']}", {"content": "Travelling to Porto in May"})
    mind.person.call("PUT", f"/memory/{made['id']}", {"content": "Travelling to Porto in June"})
    # When the person opens its page
    console.sign_in()
    console.choose_mind(mind.id)
    console.go(f"#/memory/{made['id']}", "context / current_trip")
    # Then the timeline shows all four versions, newest first, with the content diffs
    revisions = console.page.locator("ol.timeline > li h3")
    expect(revisions).to_have_text(
        ["Version 4: updated", "Version 3: updated", "Version 2: verified", "Version 1: created"]
    )
    expect(console.page.locator("ol.timeline > li").first.locator("ins")).to_contain_text("June")
    console.assert_accessible()
    console.screenshot("history", show="#history-title")
    # When they restore version 1
    console.page.get_by_role("button", name="Restore version 1").click()
    console.page.get_by_role("dialog").get_by_role("button", name="Restore", exact=True).click()
    # Then the memory holds version 1's text again, as a new version, verified
    expect(console.page.locator("ol.timeline > li h3").first).to_have_text("Version 5: restored")
    restored = mind.person.call("GET", f"/memory/{made['id']}").json()
    assert restored["content"] == "Travelling to Lisbon in May"
    assert restored["version"] == 5 and restored["verified"] is True


def test_a_memory_a_person_wrote_says_who_verified_it_and_when(console: Console, mind: Mind) -> None:
    # Given a memory a person wrote (so verified at the write)
    made = mind.person.store("fact", "employer", "Works at Initech")
    # When they open its page
    console.sign_in()
    console.choose_mind(mind.id)
    console.go(f"#/memory/{made['id']}", "fact / employer")
    # Then it names who verified it and when: the person, at the write
    fields = console.page.locator("dl.fields")
    expect(fields.locator("dd[data-field=verified]")).to_have_text("yes")
    expect(fields.locator("dd[data-field=verified_by]")).to_have_text("local-user")
    expect(fields.locator("dd[data-field=verified_at] time")).to_have_attribute(
        "datetime", made["created_at"]
    )
    console.assert_accessible()


def test_a_memory_stored_verified_without_a_stamp_names_the_writer_from_its_history(
    console: Console, mind: Mind
) -> None:
    # Given a memory as one stored before writes recorded their voucher (verified, no stamp)
    made = mind.person.store("fact", "employer", "Works at Initech")
    legacy = json.dumps({**made, "verified_at": None, "verified_by": None})
    console.page.route(
        f"**/memory/{made['id']}", lambda route: route.fulfill(body=legacy, content_type="application/json")
    )
    # When the person opens its page
    console.sign_in()
    console.choose_mind(mind.id)
    console.go(f"#/memory/{made['id']}", "fact / employer")
    # Then the console names the person whose write vouched for it, and when, from the history
    fields = console.page.locator("dl.fields")
    expect(fields.locator("dd[data-field=verified_by]")).to_have_text(
        "local-user (at their write, version 1)"
    )
    expect(fields.locator("dd[data-field=verified_at] time")).to_have_attribute(
        "datetime", made["created_at"]
    )
    console.assert_accessible()


def test_a_failed_action_is_explained_in_words_with_the_request_id(console: Console, mind: Mind) -> None:
    # Given an agent's proposal on the person's screen
    original = mind.person.store("fact", "team", "Works in the platform team")
    rewrite = mind.agent.call(
        "POST", "/memory", {"category": "fact", "key": "team", "content": "Works in the data team"}
    )
    assert rewrite.status_code == 202, rewrite.text
    console.sign_in()
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")
    item = _queue_item(console, "fact / team")
    # And meanwhile the memory changed elsewhere
    changed = mind.person.call("PUT", f"/memory/{original['id']}", {"content": "Works in the search team"})
    assert changed.status_code == 200, changed.text
    # When the person accepts the stale proposal
    item.get_by_role("button", name="Accept", exact=True).click()
    # Then the page says what went wrong, in the API's words, with its request id, and keeps the item
    alert = console.page.get_by_role("alert")
    expect(alert).to_contain_text("Could not accept the change to team:")
    expect(alert).to_contain_text("request id")
    expect(item).to_have_count(1)
