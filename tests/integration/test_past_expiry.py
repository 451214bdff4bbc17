"""A past `expires_at` silently buried a memory (issue 34 item 5): a write stored it already expired,
out of recall, and answered 201. Now every write door — POST /memory, PUT /memory/{id}, a batch
item, a hook delivery, MCP's tools — refuses an expiry more than a minute in the past with a 422
naming `expires_at` (rule `future`), or that item's error; an expiry within the minute counts as
now. Restores keep an expiry as it was, passed or not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import backups
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.clock import MovableClock
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.expiry import ago, ahead, deliver, expired_memory, mcp_tool, new_hook
from tests.support.tables import mind_items

YEAR_WRONG = "2020-01-01T00:00:00Z"  # an agent that got the year wrong


@pytest.fixture
def mind(api: Api, movable_clock: MovableClock) -> MindHandle:
    return api.create_mind()


def read(api: Api, mind: MindHandle, memory_id: str) -> dict[str, Any]:
    return ok(api.call("GET", f"/memory/{memory_id}", **as_user(mind)))


def every_memory(api: Api, mind: MindHandle) -> list[dict[str, Any]]:
    query = {"include_expired": "true"}
    memories: list[dict[str, Any]] = ok(api.call("GET", "/memory", query=query, **as_user(mind)))["memories"]
    return memories


def revisions(api: Api, mind: MindHandle, memory_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(api.call("GET", f"/memory/{memory_id}/history", **as_user(mind)))[
        "revisions"
    ]
    return found


def refused_as_past(error: dict[str, Any]) -> None:
    """An error (a 422's or a batch item's) naming expires_at and the rule `future`, saying what to do."""
    assert [(d["field"], d["rule"]) for d in error["details"]] == [("expires_at", "future")], error
    assert error["message"].startswith("expires_at: is in the past"), error
    assert "give a future time" in error["message"], error


# ---------------------------------------------------------------- POST /memory and PUT /memory/{id}


@pytest.mark.parametrize("writer", ["person", "agent"])
def test_storing_a_memory_with_a_past_expiry_is_refused_and_nothing_is_stored(
    api: Api, dynamo: Any, mind: MindHandle, writer: str
) -> None:
    # Given a memory whose expires_at has the year wrong
    # When it is stored
    answer = api.store(mind, as_agent=writer == "agent", key="trip", expires_at=YEAR_WRONG)
    # Then it is a 422 naming expires_at and the rule
    error = assert_error(answer, 422, field="expires_at", rule="future")
    refused_as_past(error)
    # And nothing is stored: not shown, not in the table
    assert every_memory(api, mind) == []
    assert mind_items(dynamo, mind.id)["memory"] == []


@pytest.mark.parametrize("path", ["PUT", "store-by-key"])
def test_updating_a_memory_to_a_past_expiry_is_refused_and_the_memory_stays_as_it_was(
    api: Api, mind: MindHandle, path: str
) -> None:
    # Given a stored memory expiring next month
    memory = ok(api.store(mind, key="trip", content="In Rome", expires_at=ahead(days=30)), 201)
    # When its expiry is moved into the past, by PUT or by storing it again under its key
    if path == "PUT":
        body = {"expires_at": ago(days=2)}
        answer = api.call("PUT", f"/memory/{memory['id']}", json_body=body, **as_user(mind))
    else:
        answer = api.store(mind, key="trip", content="In Rome", expires_at=ago(days=2))
    # Then it is a 422 naming expires_at, and the memory is unchanged: same version, one revision
    refused_as_past(assert_error(answer, 422, field="expires_at", rule="future"))
    assert read(api, mind, memory["id"]) == memory
    assert len(revisions(api, mind, memory["id"])) == 1


@pytest.mark.parametrize("seconds_ago", [0, 1, 30, 60])
def test_an_expiry_now_or_within_the_minute_of_grace_is_taken_as_now(
    api: Api, mind: MindHandle, seconds_ago: int
) -> None:
    # Given an expiry of now, or a moment before (a client whose clock runs a little behind)
    given = ago(seconds=seconds_ago)
    # When a memory is stored with it
    stored = ok(api.store(mind, key="standup", expires_at=given), 201)
    # Then it is taken as written, and the memory is expired at once: out of the list, readable by id
    assert (stored["expires_at"], stored["expired"]) == (given, True)
    assert [m["id"] for m in every_memory(api, mind)] == [stored["id"]]
    assert ok(api.call("GET", "/memory", **as_user(mind)))["memories"] == []


def test_a_millisecond_beyond_the_grace_is_refused(api: Api, mind: MindHandle) -> None:
    # Given an expiry one millisecond further back than the grace
    # When a memory is stored with it, Then it is refused
    answer = api.store(mind, key="standup", expires_at=ago(seconds=60, milliseconds=1))
    assert_error(answer, 422, field="expires_at", rule="future")


# ---------------------------------------------------------------- batch and hook items


def test_a_batch_item_with_a_past_expiry_is_that_items_error_and_the_others_are_stored(
    api: Api, mind: MindHandle
) -> None:
    # Given a batch of three, the second expiring in the past
    items = [
        {"category": "fact", "key": "first", "content": "One"},
        {"category": "fact", "key": "second", "content": "Two", "expires_at": YEAR_WRONG},
        {"category": "fact", "key": "third", "content": "Three", "expires_at": ahead(days=1)},
    ]
    # When it is stored
    answer = ok(api.call("POST", "/memory/batch", json_body={"memories": items}, **as_agent(mind)))
    # Then the second is that item's error naming expires_at, and the other two are stored
    assert [r["status"] for r in answer["results"]] == ["created", "error", "created"]
    refused_as_past(answer["results"][1]["error"])
    assert answer["summary"] == {"created": 2, "replaced": 0, "proposed": 0, "failed": 1}
    assert sorted(m["key"] for m in every_memory(api, mind)) == ["first", "third"]


def test_a_hook_deliverys_item_with_a_past_expiry_is_that_items_error(api: Api, mind: MindHandle) -> None:
    # Given a signed delivery of two memories, the first expiring in the past
    hook = new_hook(api, mind)
    body = {
        "memories": [
            {"category": "context", "key": "call", "content": "On a call", "expires_at": ago(hours=1)},
            {"category": "fact", "key": "city", "content": "Lives in Berlin"},
        ]
    }
    # When it arrives
    answer = ok(deliver(api, hook, body))
    # Then the first is refused as that item's error, and the second is stored
    assert [r["status"] for r in answer["results"]] == ["error", "created"]
    refused_as_past(answer["results"][0]["error"])
    assert [m["key"] for m in every_memory(api, mind)] == ["city"]


@pytest.mark.parametrize("path", ["PUT", "store-by-key", "batch", "hook"])
def test_an_agents_past_expiry_on_a_verified_memory_is_refused_not_proposed(
    api: Api, mind: MindHandle, path: str
) -> None:
    # Given a memory a person stored and so verified
    memory = ok(api.store(mind, key="allergy", content="Allergic to penicillin"), 201)
    write = {
        "category": "fact",
        "key": "allergy",
        "content": "Allergic to penicillin",
        "expires_at": YEAR_WRONG,
    }
    # When an agent gives it a past expiry, by each of its write paths
    if path == "PUT":
        answer = api.call(
            "PUT", f"/memory/{memory['id']}", json_body={"expires_at": YEAR_WRONG}, **as_agent(mind)
        )
        refused_as_past(assert_error(answer, 422, field="expires_at", rule="future"))
    elif path == "store-by-key":
        answer = api.call("POST", "/memory", json_body=write, **as_agent(mind))
        refused_as_past(assert_error(answer, 422, field="expires_at", rule="future"))
    else:
        body = {"memories": [write]}
        sent = api.call("POST", "/memory/batch", json_body=body, **as_agent(mind))
        (result,) = ok(sent if path == "batch" else deliver(api, new_hook(api, mind), body))["results"]
        assert result["status"] == "error"
        refused_as_past(result["error"])
    # Then no proposal waits for review, and the memory is as the person left it
    assert ok(api.call("GET", "/proposals", **as_user(mind)))["proposals"] == []
    assert read(api, mind, memory["id"]) == memory


# ---------------------------------------------------------------- MCP


def test_mcp_remember_with_a_past_expiry_is_a_tool_error_the_model_can_act_on(
    api: Api, mind: MindHandle
) -> None:
    # Given an agent that got the year wrong
    # When it calls remember with that expiry
    failed, text = mcp_tool(
        api, mind.key, "remember", content="Standup moved to 10:00", expires_at=YEAR_WRONG
    )
    # Then the result is a tool error saying the expiry is in the past, when now is, and what to do
    assert failed is True
    assert text.startswith("expires_at: is in the past (2020-01-01T00:00:00.000Z, now ")
    assert "give a future time" in text
    # And nothing is stored
    assert every_memory(api, mind) == []


def test_mcp_update_and_remember_many_refuse_a_past_expiry_too(api: Api, mind: MindHandle) -> None:
    # Given a memory an agent stored
    failed, text = mcp_tool(api, mind.key, "remember", key="plan", category="project", content="Ship v2")
    assert not failed, text
    memory = json.loads(text)
    # When the agent moves its expiry into the past with update
    failed, text = mcp_tool(api, mind.key, "update", id=memory["id"], expires_at=YEAR_WRONG)
    # Then it is a tool error naming expires_at, and the memory is unchanged
    assert failed is True and text.startswith("expires_at: is in the past")
    assert read(api, mind, memory["id"])["version"] == 1
    # And remember_many answers that item's error, storing the others
    items = [{"content": "Likes tea"}, {"content": "In a meeting", "expires_at": YEAR_WRONG}]
    failed, text = mcp_tool(api, mind.key, "remember_many", memories=items)
    assert not failed, text
    results = json.loads(text)["results"]
    assert [r["status"] for r in results] == ["created", "error"]
    refused_as_past(results[1]["error"])


# ---------------------------------------------------------------- restores keep theirs


def test_restoring_a_backup_keeps_a_memory_whose_expiry_has_long_passed(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a mind holding a memory that expired a day ago, and one that does not expire
    expired = expired_memory(api, mind, movable_clock, key="old_trip", content="In Rome")
    live = ok(api.store(mind, key="home", content="Lives in Berlin"), 201)
    # When its backup is restored into a new mind
    target = api.create_mind(name="Restored")
    assert backups.restore(api, target, backups.backup(api, mind))["status"] == "done"
    # Then the expired memory is there, with its expiry as it was, and still expired
    restored = read(api, target, expired["id"])
    assert (restored["expires_at"], restored["expired"]) == (expired["expires_at"], True)
    assert [m["id"] for m in ok(api.call("GET", "/memory", **as_user(target)))["memories"]] == [live["id"]]


def test_restoring_an_earlier_version_keeps_its_passed_expiry(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a memory stored expiring in an hour, then made never to expire
    memory = ok(api.store(mind, key="pass", content="Gate code 4711", expires_at=ahead(hours=1)), 201)
    ok(api.call("PUT", f"/memory/{memory['id']}", json_body={"expires_at": None}, **as_user(mind)))
    # When a day later the person restores the first version
    movable_clock.advance(days=1)
    body = {"version": 1}
    back = ok(api.call("POST", f"/memory/{memory['id']}/restore", json_body=body, **as_user(mind)))
    # Then it comes back with that version's expiry, passed, so expired
    assert (back["version"], back["expires_at"], back["expired"]) == (3, memory["expires_at"], True)
