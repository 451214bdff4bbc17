"""Racing writers through the gateway: a key stays unique and no write is lost."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.memory import store, writes
from synapse.memory.kinds import Source
from synapse.memory.model import MemoryWrite

from tests.support.api import Api, memory_body
from tests.support.checks import as_user, assert_error
from tests.support.races import race
from tests.support.tables import MINDS, mind_items

WRITERS = 20
# powertools' Metrics is one object per process; with 20 handlers on threads one may flush another's
# metrics. Lambda runs one invocation per process, so the warning is an artefact of this test.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def test_racing_stores_of_one_key_leave_one_memory_at_version_20(api: Api, dynamo: Any) -> None:
    # Given a mind whose agents may rewrite what a person verified (no proposals: each write applies)
    mind = api.create_mind()
    unverify = {"agent_writes_to_verified": "unverify"}
    assert api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=unverify).status == 200
    # When 20 writers store the same (category, key) at once, half as the user and half as an agent
    answers = race(
        WRITERS,
        lambda i: api.store(mind, as_agent=i % 2 == 1, content=f"writer {i}", tags=["race", f"w{i}"]),
    )
    # Then exactly one write created it and every other replaced it
    statuses = sorted(a.status for a in answers)
    assert statuses == [200] * (WRITERS - 1) + [201], [a.text for a in answers if a.status >= 300]
    assert len({a.json()["id"] for a in answers}) == 1
    assert sorted(a.json()["version"] for a in answers) == list(range(1, WRITERS + 1))
    # And one memory remains, at version 20, holding the last writer's content
    memories = api.call("GET", "/memory", **as_user(mind)).json()["memories"]
    assert len(memories) == 1 and memories[0]["version"] == WRITERS
    last = next(a.json() for a in answers if a.json()["version"] == WRITERS)
    assert memories[0]["content"] == last["content"]
    # And the table holds one memory item, one id pointer, and only the last write's tag copies
    items = mind_items(dynamo, mind.id)
    assert (len(items["memory"]), len(items["pointer"])) == (1, 1)
    assert sorted(i["memory"]["id"] for i in items["tag"]) == [last["id"]] * 2
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["memory_count"] == 1


def test_racing_stores_of_different_keys_all_land(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    answers = race(WRITERS, lambda i: api.store(mind, as_agent=True, key=f"key_{i}", tags=["bulk"]))
    assert [a.status for a in answers] == [201] * WRITERS, [a.text for a in answers if a.status != 201]
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["memory_count"] == WRITERS
    listed = api.call("GET", "/memory", query={"limit": 100}, **as_user(mind)).json()["memories"]
    assert sorted(m["key"] for m in listed) == sorted(f"key_{i}" for i in range(WRITERS))
    assert len(mind_items(dynamo, mind.id)["pointer"]) == WRITERS


def test_racing_conditional_updates_let_exactly_one_win(api: Api) -> None:
    # Given a memory at version 1
    mind = api.create_mind()
    memory = api.store(mind).json()

    # When 20 writers each PUT with If-Match: 1
    def update(i: int) -> Any:
        return api.call(
            "PUT",
            f"/memory/{memory['id']}",
            json_body={"content": f"writer {i}"},
            token=mind.jwt,
            headers={"X-Mind-Id": mind.id, "If-Match": "1"},
        )

    answers = race(WRITERS, update)
    # Then one wins and every other gets 412
    assert sorted(a.status for a in answers) == [200] + [412] * (WRITERS - 1)
    winner = next(a.json() for a in answers if a.status == 200)
    final = api.call("GET", f"/memory/{memory['id']}", **as_user(mind)).json()
    assert (final["version"], final["content"]) == (2, winner["content"])


def test_racing_deletes_and_stores_never_leave_a_half_memory(api: Api, dynamo: Any) -> None:
    # Given a memory that writers re-store while others delete it
    mind = api.create_mind()
    first = api.store(mind, tags=["x"]).json()

    def churn(i: int) -> Any:
        if i % 2:
            return api.store(mind, content=f"writer {i}", tags=["x", f"t{i}"])
        current = api.call("GET", "/memory", **as_user(mind)).json()["memories"]
        target = current[0]["id"] if current else first["id"]
        return api.call("DELETE", f"/memory/{target}", **as_user(mind))

    answers = race(WRITERS, churn)
    assert all(a.status in (200, 201, 204, 404) for a in answers), [a.text for a in answers]
    # Then whatever is left is whole: each memory has its pointer and exactly its tag copies
    items = mind_items(dynamo, mind.id)
    assert len(items["memory"]) == len(items["pointer"]) <= 1
    expected_tags = sum(len(m["tags"]) for m in items["memory"])
    assert len(items["tag"]) == expected_tags
    count = api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["memory_count"]
    assert count == len(items["memory"])


def test_a_writer_holding_a_deleted_memory_never_overwrites_its_successor(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a memory a writer has read, then deleted and stored again under the same key:
    # the successor starts again at version 1, like the memory the writer holds
    mind = api.create_mind()
    first = api.store(mind, tags=["x"]).json()
    held = store.get_memory(mind.id, first["id"])
    assert api.call("DELETE", f"/memory/{first['id']}", **as_user(mind)).status == 204
    successor = api.store(mind, tags=["x", "y"]).json()
    assert successor["version"] == held.version == 1

    # When that writer replaces what it holds (its first read is the stale one)
    stale_reads = iter([held])
    fresh_read = writes.read_by_key
    monkeypatch.setattr(writes, "read_by_key", lambda *key: next(stale_reads, None) or fresh_read(*key))
    result = store.store(mind.id, MemoryWrite.from_body(memory_body(tags=["z"])), Source.USER)

    # Then the stale attempt loses, the retry replaces the successor, and nothing is left orphaned
    assert (result.memory.id, result.memory.version) == (successor["id"], 2)
    items = mind_items(dynamo, mind.id)
    assert [m["id"] for m in items["memory"]] == [successor["id"]]
    assert [p["sk"] for p in items["pointer"]] == [f"ID#{successor['id']}"]
    assert [t["memory"]["tags"] for t in items["tag"]] == [["z"]]


def test_deleting_a_memory_while_its_mind_is_deleted_is_a_404(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a memory whose mind a racing DELETE /minds removes right after this request checked it
    # (the mind item is gone, its memories not yet purged)
    from synapse.storage import tables
    from synapse.teams import roles

    mind = api.create_mind()
    memory = api.store(mind).json()
    checked = roles.require

    def checked_then_deleted(mind_id: str, user_id: str, needed: str) -> Any:
        found = checked(mind_id, user_id, needed)
        dynamo.delete_item(TableName=MINDS, Key=tables.dump(tables.mind_key(mind_id)))
        return found

    monkeypatch.setattr(roles, "require", checked_then_deleted)
    # When the memory is deleted
    answer = api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind))
    # Then it is a 404 (the mind is gone), not a 429 after retrying a write that can never succeed
    assert_error(answer, 404)
