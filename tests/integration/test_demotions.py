"""Verified means protected (issue 21 item 3): an agent's change that would take a verified memory
down or out of recall — an expiry added, brought forward, or now (a moment ago, within the grace of
a write's expiry, counts as now); a lower priority; a lower confidence; a delete — waits as a
proposal, on every agent write path, exactly like a change of its content. A person's same change
applies directly; so does an agent's raise."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.webhooks import signing

from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok

CONTENT = "Allergic to penicillin"
FAR = "2099-01-01T00:00:00.000Z"
LATER_STILL = "2099-06-01T00:00:00.000Z"
PENDING_LINE = "  (change proposed by an agent, pending review)"


def a_moment_ago() -> str:
    """An expiry just past, within the grace a write's expiry has (model.EXPIRY_GRACE): taken as now."""
    return clock.to_iso(clock.now() - timedelta(seconds=30))


def now() -> str:
    return clock.to_iso(clock.now())


# What a person stored (and so verified) for each case, and the agent's demoting change to it.
# An expiry is stored on the memory only where the case needs one to bring forward.
DEMOTIONS: dict[str, tuple[dict[str, Any], Any]] = {
    "expiry a moment ago": ({}, lambda: {"expires_at": a_moment_ago()}),
    "expiry now": ({}, lambda: {"expires_at": now()}),
    "expiry added, far off": ({}, lambda: {"expires_at": FAR}),
    "expiry brought forward": ({"expires_at": LATER_STILL}, lambda: {"expires_at": FAR}),
    "priority lowered to low": ({}, lambda: {"priority": "low"}),
    "priority lowered by one step": ({}, lambda: {"priority": "normal"}),
    "confidence to zero": ({}, lambda: {"confidence": 0.0}),
    "confidence lowered a little": ({}, lambda: {"confidence": 0.99}),
    "priority low and confidence zero": ({}, lambda: {"priority": "low", "confidence": 0.0}),
}


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def person_stores(api: Api, mind: MindHandle, **fields: Any) -> dict[str, Any]:
    """A memory a person stored, so verified: high priority, confidence 1.0."""
    body = {"key": "allergy", "category": "identity", "content": CONTENT, "priority": "high", **fields}
    return ok(api.store(mind, **body), 201)


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> dict[str, Any]:
    return ok(api.call("GET", path, query=query, **as_user(mind)))


def recall(api: Api, mind: MindHandle) -> str:
    answer = api.call("GET", "/memory/recall", **as_agent(mind))
    assert answer.status == 200, answer.text
    return answer.text


def full_write(memory: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """A store-again by key that repeats the memory's fields except `change`."""
    fields = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")
    return {**{name: memory[name] for name in fields}, **change}


def deliver(api: Api, mind: MindHandle, body: dict[str, Any]) -> dict[str, Any]:
    """A signed delivery to a new inbound hook of the mind."""
    hook = ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}), 201)
    payload = json.dumps(body).encode()
    signature = signing.header_value([hook["secret"]], payload, int(time.time()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    return ok(api.call("POST", f"/hooks/{hook['id']}", raw_body=payload, headers=headers))


def agent_changes(
    api: Api, mind: MindHandle, path: str, memory: dict[str, Any], change: dict[str, Any]
) -> Any:
    """The agent's change by `path`; the proposal and the memory as it stays, as that path reports them."""
    if path == "PUT":
        answer = ok(api.call("PUT", f"/memory/{memory['id']}", json_body=change, **as_agent(mind)), 202)
        return answer["proposal"], answer["memory"]
    write = full_write(memory, change)
    if path == "store-by-key":
        answer = ok(api.call("POST", "/memory", json_body=write, **as_agent(mind)), 202)
        return answer["proposal"], answer["memory"]
    if path == "batch":
        body = {"memories": [write]}
        answer = ok(api.call("POST", "/memory/batch", json_body=body, **as_agent(mind)))
    else:
        answer = deliver(api, mind, write)
    (result,) = answer["results"]
    assert result["status"] == "proposed", result
    assert answer["summary"]["proposed"] == 1
    return result["proposal"], get(api, mind, f"/memory/{memory['id']}")


def expected_after(memory: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The proposed fields: the memory's with the change, expiry normalised."""
    fields = ("content", "tags", "priority", "confidence", "expires_at", "occurred_at")
    proposed = {name: memory[name] for name in fields}
    proposed.update(change)
    if proposed["expires_at"] is not None:
        proposed["expires_at"] = clock.to_iso(clock.from_iso(proposed["expires_at"]))
    return proposed


# ---------------------------------------------------------------- every path, every demotion


@pytest.mark.parametrize("path", ["PUT", "store-by-key", "batch", "hook"])
@pytest.mark.parametrize("case", sorted(DEMOTIONS))
def test_an_agents_demotion_of_a_verified_memory_is_a_proposal_and_accepting_applies_it(
    api: Api, mind: MindHandle, path: str, case: str
) -> None:
    # Given a memory a person stored and so verified
    stored_with, change_of = DEMOTIONS[case]
    memory = person_stores(api, mind, **stored_with)
    change = change_of()
    # When an agent demotes it by this path
    proposal, stays = agent_changes(api, mind, path, memory, change)
    # Then it is a pending proposal of the whole change
    assert (proposal["status"], proposal["action"], proposal["memory_id"]) == (
        "pending",
        "update",
        memory["id"],
    )
    expected = expected_after(memory, change)
    if path == "hook":  # a hook holds no `read`: its answers carry no content nor tags (docs/auth.md)
        expected = {name: value for name, value in expected.items() if name not in ("content", "tags")}
    assert proposal["proposed"] == expected
    assert proposal["base_version"] == 1 and proposal["proposed_by"]["source"] == "agent"
    # And the memory is untouched and still verified, only marked, and still in recall
    assert stays == {**memory, "pending_proposal": proposal["id"]}
    assert get(api, mind, f"/memory/{memory['id']}") == stays
    text = recall(api, mind)
    assert CONTENT in text and "identity (HIGH) [verified]" in text and PENDING_LINE in text
    # When the person accepts it
    accepted = ok(api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind)))
    # Then the change applies as a new version they vouch for
    after = accepted["memory"]
    assert {name: after[name] for name in proposal["proposed"]} == proposal["proposed"]
    assert (after["version"], after["verified"], after["pending_proposal"]) == (2, True, None)
    assert get(api, mind, f"/memory/{memory['id']}") == after
    # And an expiry now or a moment ago takes it out of recall only then
    gone = case in {"expiry a moment ago", "expiry now"}
    assert after["expired"] is gone and (CONTENT in recall(api, mind)) is not gone


@pytest.mark.parametrize("case", sorted(DEMOTIONS))
def test_a_persons_same_change_applies_directly(api: Api, mind: MindHandle, case: str) -> None:
    # Given a verified memory
    stored_with, change_of = DEMOTIONS[case]
    memory = person_stores(api, mind, **stored_with)
    change = change_of()
    # When the person makes the change, by PUT and by storing again
    put = ok(api.call("PUT", f"/memory/{memory['id']}", json_body=change, **as_user(mind)))
    again = ok(api.store(mind, **full_write(memory, change)))
    # Then both apply at once, verified, and no proposal is made
    proposed = expected_after(memory, change)
    for changed, version in ((put, 2), (again, 3)):
        assert {name: changed[name] for name in proposed} == proposed
        assert (changed["version"], changed["verified"], changed["pending_proposal"]) == (version, True, None)
    assert get(api, mind, "/proposals")["proposals"] == []


# ---------------------------------------------------------------- delete


def test_an_agents_delete_of_a_verified_memory_is_a_proposal_and_accepting_deletes_it(
    api: Api, mind: MindHandle
) -> None:
    # Given a verified memory
    memory = person_stores(api, mind)
    # When an agent with the delete scope deletes it
    answer = ok(api.call("DELETE", f"/memory/{memory['id']}", **as_agent(mind)), 202)
    # Then it is a pending proposal to delete, and the memory stays, verified, marked and in recall
    proposal = answer["proposal"]
    assert (proposal["action"], proposal["status"], proposal["base_version"]) == ("delete", "pending", 1)
    assert proposal["proposed_by"] == {"source": "agent", "key_id": mind.key_id}
    assert answer["memory"] == get(api, mind, f"/memory/{memory['id']}")
    assert answer["memory"] == {**memory, "pending_proposal": proposal["id"]}
    assert CONTENT in recall(api, mind)
    # When the person accepts it
    accepted = ok(api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind)))
    # Then the memory is deleted, as a delete by them: 404, its history ends in `deleted`, restorable
    assert accepted["memory"] is None and accepted["proposal"]["status"] == "accepted"
    assert_error(api.call("GET", f"/memory/{memory['id']}", **as_user(mind)), 404)
    assert CONTENT not in recall(api, mind)
    latest = get(api, mind, f"/memory/{memory['id']}/history")["revisions"][0]
    assert (latest["version"], latest["change"]) == (2, "deleted")
    assert latest["changed_by"] == {"source": "user", "user_id": "user-1"}
    restore = {"version": 1}
    back = ok(api.call("POST", f"/memory/{memory['id']}/restore", json_body=restore, **as_user(mind)))
    assert (back["content"], back["verified"], back["pending_proposal"]) == (CONTENT, True, None)


def test_rejecting_a_proposed_delete_keeps_the_memory(api: Api, mind: MindHandle) -> None:
    # Given an agent's proposed delete of a verified memory
    memory = person_stores(api, mind)
    proposal = ok(api.call("DELETE", f"/memory/{memory['id']}", **as_agent(mind)), 202)["proposal"]
    # When the person rejects it
    rejected = ok(api.call("POST", f"/proposals/{proposal['id']}/reject", **as_user(mind)))
    # Then the memory is as it was, unmarked
    assert rejected["memory"] == memory == get(api, mind, f"/memory/{memory['id']}")
    assert rejected["proposal"]["status"] == "rejected"


def test_a_proposed_delete_accepted_after_the_memory_changed_is_a_409(api: Api, mind: MindHandle) -> None:
    # Given an agent's proposed delete, then the person changes the memory
    memory = person_stores(api, mind)
    proposal = ok(api.call("DELETE", f"/memory/{memory['id']}", **as_agent(mind)), 202)["proposal"]
    ok(api.call("PUT", f"/memory/{memory['id']}", json_body={"content": "Not allergic"}, **as_user(mind)))
    # When the person accepts the delete
    answer = api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind))
    # Then it is a 409 and the memory is still there
    assert_error(answer, 409)
    assert get(api, mind, f"/memory/{memory['id']}")["content"] == "Not allergic"


def test_a_persons_delete_and_an_agents_delete_of_an_unverified_memory_apply_directly(
    api: Api, mind: MindHandle
) -> None:
    verified = person_stores(api, mind)
    unverified = ok(api.store(mind, as_agent=True, key="guess", content="Maybe likes jazz"), 201)
    assert api.call("DELETE", f"/memory/{unverified['id']}", **as_agent(mind)).status == 204
    assert api.call("DELETE", f"/memory/{verified['id']}", **as_user(mind)).status == 204
    assert get(api, mind, "/proposals")["proposals"] == []
    assert get(api, mind, "/memory")["memories"] == []


def test_a_newer_proposal_supersedes_a_proposed_delete(api: Api, mind: MindHandle) -> None:
    memory = person_stores(api, mind)
    first = ok(api.call("DELETE", f"/memory/{memory['id']}", **as_agent(mind)), 202)["proposal"]
    body = {"priority": "low"}
    second = ok(api.call("PUT", f"/memory/{memory['id']}", json_body=body, **as_agent(mind)), 202)
    assert get(api, mind, f"/proposals/{first['id']}")["status"] == "superseded"
    assert get(api, mind, f"/memory/{memory['id']}")["pending_proposal"] == second["proposal"]["id"]


# ---------------------------------------------------------------- what applies directly


@pytest.mark.parametrize(
    ("stored_with", "change"),
    [
        ({"priority": "normal"}, {"priority": "high"}),
        ({"priority": "normal", "confidence": 0.5}, {"confidence": 0.9}),
        ({"expires_at": FAR}, {"expires_at": None}),
        ({"expires_at": FAR}, {"expires_at": LATER_STILL}),
        ({}, {"priority": "high", "confidence": 1.0, "expires_at": None}),  # the same again
    ],
    ids=["priority raised", "confidence raised", "expiry removed", "expiry extended", "nothing changed"],
)
def test_an_agents_raise_of_a_verified_memory_applies_directly_and_keeps_it_verified(
    api: Api, mind: MindHandle, stored_with: dict[str, Any], change: dict[str, Any]
) -> None:
    # Given a verified memory
    memory = person_stores(api, mind, **stored_with)
    # When an agent raises it (by PUT, and by storing it again with the same change)
    put = ok(api.call("PUT", f"/memory/{memory['id']}", json_body=change, **as_agent(mind)))
    again = ok(api.call("POST", "/memory", json_body=full_write(memory, change), **as_agent(mind)))
    # Then both apply, and the memory stays verified with no proposal
    for changed in (put, again):
        assert {name: changed[name] for name in change} == change
        assert (changed["verified"], changed["pending_proposal"]) == (True, None)
    assert get(api, mind, "/proposals")["proposals"] == []


def test_an_agents_store_again_at_its_default_confidence_is_a_proposal(api: Api, mind: MindHandle) -> None:
    # Given a verified memory (a person's confidence: 1.0)
    person_stores(api, mind)
    # When an agent stores the same content again, leaving out confidence (an agent's default: 0.7)
    answer = ok(
        api.call(
            "POST",
            "/memory",
            json_body=memory_body(category="identity", key="allergy", content=CONTENT, priority="high"),
            **as_agent(mind),
        ),
        202,
    )
    # Then the lower confidence waits for review and the memory keeps 1.0
    assert answer["proposal"]["proposed"]["confidence"] == 0.7
    assert answer["memory"]["confidence"] == 1.0 and answer["memory"]["verified"] is True


# ---------------------------------------------------------------- unverify


def test_unverify_applies_an_agents_demotion_and_delete_and_leaves_the_memory_unverified(
    api: Api, mind: MindHandle
) -> None:
    # Given a mind whose agents' writes to verified memories apply (the older rule)
    body = {"agent_writes_to_verified": "unverify"}
    ok(api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=body))
    memory = person_stores(api, mind)
    other = person_stores(api, mind, key="blood_type", content="Blood type 0+")
    # When an agent lowers one's priority and deletes the other
    body = {"priority": "low"}
    lowered = ok(api.call("PUT", f"/memory/{memory['id']}", json_body=body, **as_agent(mind)))
    deleted = api.call("DELETE", f"/memory/{other['id']}", **as_agent(mind))
    # Then both apply: the demoted memory is no longer verified, the other is gone, no proposal made
    assert (lowered["priority"], lowered["verified"], lowered["verified_by"]) == ("low", False, None)
    assert deleted.status == 204
    assert_error(api.call("GET", f"/memory/{other['id']}", **as_user(mind)), 404)
    assert get(api, mind, "/proposals")["proposals"] == []
