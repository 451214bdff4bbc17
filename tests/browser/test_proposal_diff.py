"""The review queue shows what an agent's proposal would do to a verified memory besides its text
(issue 21 item 3): a lower priority or confidence, an expiry that takes it out of recall, a delete —
each named, and the delete decided with "Accept and delete"."""

from __future__ import annotations

from datetime import UTC, datetime

from playwright.sync_api import Locator, expect

from tests.browser.conftest import Console, Mind


def _queue_item(console: Console, key: str) -> Locator:
    return console.page.locator("li.item", has=console.page.get_by_role("heading", name=key))


def test_an_agents_demotions_and_delete_of_verified_memories_show_in_the_queue(
    console: Console, mind: Mind
) -> None:
    # Given three memories a person stored, which an agent demotes, buries and deletes
    allergy = mind.person.store("identity", "allergy", "Allergic to penicillin", priority="high")
    employer = mind.person.store("fact", "employer", "Works at Acme")
    team = mind.person.store("fact", "team", "Works in the platform team")
    demoted = mind.agent.call("PUT", f"/memory/{allergy['id']}", {"priority": "low", "confidence": 0.0})
    now = datetime.now(UTC).isoformat()  # expire at once (a past expiry is refused: issue 34 item 5)
    buried = mind.agent.call("PUT", f"/memory/{employer['id']}", {"expires_at": now})
    deleted = mind.agent.call("DELETE", f"/memory/{team['id']}")
    assert [demoted.status_code, buried.status_code, deleted.status_code] == [202, 202, 202]
    # When the person opens the queue
    console.sign_in()
    console.choose_mind(mind.id)
    console.wait_heading("Review queue")
    # Then the demotion names the lower priority and confidence, the text shown as it stays
    item = _queue_item(console, "identity / allergy")
    changes = item.get_by_role("list", name="Other proposed changes")
    expect(changes).to_contain_text("Priority: high → low lower priority")
    expect(changes).to_contain_text("Confidence: 1.00 → 0.00 lower confidence")
    expect(item.locator("p.content")).to_have_text("Allergic to penicillin")
    # And the expiry now says it leaves recall at once
    expiring = _queue_item(console, "fact / employer").get_by_role("list", name="Other proposed changes")
    expect(expiring).to_contain_text("Expires: never → ")
    expect(expiring).to_contain_text("leaves recall at once")
    # And the delete is a proposed delete, to accept and delete or reject
    doomed = _queue_item(console, "fact / team")
    expect(doomed.locator("p.kind")).to_have_text("proposed delete")
    expect(doomed).to_contain_text("The agent proposes to delete this memory.")
    console.assert_accessible()
    # When the person accepts the delete
    doomed.get_by_role("button", name="Accept and delete").click()
    expect(doomed).to_have_count(0)
    # Then the memory is gone, and the demoted one still waits, untouched and verified
    assert mind.person.call("GET", f"/memory/{team['id']}").status_code == 404
    kept = mind.person.call("GET", f"/memory/{allergy['id']}").json()
    assert (kept["priority"], kept["confidence"], kept["verified"]) == ("high", 1.0, True)
    expect(item).to_have_count(1)
