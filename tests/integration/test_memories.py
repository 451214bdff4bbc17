"""Memories through the API (SPEC §1 lifecycle, §3 "Memories"): store, replace, read, update,
verify, delete, and list with filters and pagination."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.memory import keys, reads
from synapse.storage import tables

from tests.support.api import Api, MindHandle, memory_body
from tests.support.calls import counted_calls
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.clock import START, MovableClock
from tests.support.clock import frozen_clock_fixture as frozen_clock_fixture
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.clock import ticking_clock_fixture as ticking_clock_fixture
from tests.support.tables import mind_items

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FUTURE = "2099-01-01T00:00:00+01:00"
SOON = clock.to_iso(START + timedelta(hours=1))


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def get(api: Api, mind: MindHandle, memory_id: str) -> dict[str, Any]:
    answer = api.call("GET", f"/memory/{memory_id}", **as_user(mind))
    assert answer.status == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def listed(api: Api, mind: MindHandle, **query: Any) -> list[dict[str, Any]]:
    answer = api.call("GET", "/memory", query=query, **as_user(mind))
    assert answer.status == 200, answer.text
    memories: list[dict[str, Any]] = answer.json()["memories"]
    return memories


def put(api: Api, mind: MindHandle, memory_id: str, body: dict[str, Any], **headers: str) -> Any:
    return api.call(
        "PUT",
        f"/memory/{memory_id}",
        json_body=body,
        token=mind.jwt,
        headers={"X-Mind-Id": mind.id, **headers},
    )


# ---------------------------------------------------------------- create and replace


def test_store_creates_a_memory_with_specs_fields(api: Api, mind: MindHandle) -> None:
    # When a person stores a memory
    answer = api.store(mind, tags=[" Docker", "SWARM", "docker"], expires_at=FUTURE)
    # Then it is a 201 pointing at the new memory
    assert answer.status == 201, answer.text
    memory = answer.json()
    assert answer.headers["Location"] == f"/memory/{memory['id']}"
    assert memory["id"].startswith("mem_") and memory["mind_id"] == mind.id
    assert (memory["category"], memory["key"], memory["content"]) == ("fact", "home_city", "Lives in Berlin")
    assert memory["tags"] == ["docker", "swarm"]
    assert (memory["priority"], memory["source"], memory["verified"], memory["confidence"]) == (
        "normal",
        "user",
        True,
        1.0,
    )
    assert memory["expires_at"] == "2098-12-31T23:00:00.000Z" and memory["expired"] is False
    assert memory["version"] == 1 and STAMP.match(memory["created_at"])
    assert memory["updated_at"] == memory["created_at"]
    # And reading it back gives the same object
    assert get(api, mind, memory["id"]) == memory


def test_an_agents_memory_starts_unverified_at_confidence_0_7(api: Api, mind: MindHandle) -> None:
    memory = api.store(mind, as_agent=True).json()
    assert (memory["source"], memory["verified"], memory["confidence"]) == ("agent", False, 0.7)


def test_storing_the_same_key_again_replaces(api: Api, mind: MindHandle, ticking_clock: None) -> None:
    # Given a stored memory
    first = api.store(mind, tags=["a"], priority="high", confidence=0.9, expires_at=FUTURE).json()
    # When the same (category, key) is stored again
    answer = api.store(mind, content="Lives in Hamburg", tags=["b"])
    # Then it is a 200 replacing it: same id and created_at, new everything else, version + 1
    assert answer.status == 200, answer.text
    second = answer.json()
    assert "Location" not in answer.headers
    assert (second["id"], second["created_at"]) == (first["id"], first["created_at"])
    assert (
        second["content"],
        second["tags"],
        second["priority"],
        second["confidence"],
        second["expires_at"],
    ) == (
        "Lives in Hamburg",
        ["b"],
        "normal",
        1.0,
        None,
    )
    assert second["version"] == 2 and second["updated_at"] > first["updated_at"]
    # And the mind still holds one memory
    assert [m["id"] for m in listed(api, mind)] == [first["id"]]


def test_the_same_key_in_another_category_is_another_memory(api: Api, mind: MindHandle) -> None:
    one = api.store(mind, category="fact").json()
    other = api.store(mind, category="preference")
    assert other.status == 201 and other.json()["id"] != one["id"]


def test_content_alone_is_a_note_keyed_by_its_content_and_stored_again_it_replaces(
    api: Api, mind: MindHandle, ticking_clock: None
) -> None:
    # When a body holds content and nothing else
    answer = api.call("POST", "/memory", json_body={"content": "Works at a standing desk"}, **as_user(mind))
    # Then it is a 201: a note whose key the server derived from the content, and says so
    assert answer.status == 201, answer.text
    first = answer.json()
    assert (first["category"], first["key"]) == ("note", keys.derived_key("note", "Works at a standing desk"))
    assert first["key"].startswith("works_standing_desk_") and first["key_derived"] is True
    # When the same text comes again (case and spacing aside)
    again = api.call("POST", "/memory", json_body={"content": " works at a  STANDING desk"}, **as_user(mind))
    # Then it replaces that note: same id, version 2, one memory in the mind
    assert again.status == 200, again.text
    assert (again.json()["id"], again.json()["version"]) == (first["id"], 2)
    assert [m["id"] for m in listed(api, mind)] == [first["id"]]
    # And a chosen key is not a derived one
    chosen = api.call("POST", "/memory", json_body={"content": "Tea", "key": "drink"}, **as_user(mind)).json()
    assert (chosen["category"], chosen["key"], chosen["key_derived"]) == ("note", "drink", False)


def test_a_content_only_write_is_created_without_a_read_and_its_text_again_still_replaces(
    api: Api, mind: MindHandle
) -> None:
    # Given the DynamoDB calls a write makes on the memories table
    memories = f"GetItem:{tables.memories_table()}"
    # When content alone is stored: its derived key ends in a digest of the text
    with counted_calls() as calls:
        first = api.call("POST", "/memory", json_body={"content": "Takes the 7:40 train"}, **as_user(mind))
    # Then it is created by one transaction, with no read of the key before it
    assert first.status == 201, first.text
    assert (calls[memories], calls["TransactWriteItems"]) == (0, 1), calls
    # When the same text comes again: the unread create finds its key taken
    with counted_calls() as calls:
        again = api.call("POST", "/memory", json_body={"content": "takes the 7:40 train"}, **as_user(mind))
    # Then it reads and replaces, as any write of a taken key: one memory, version 2
    assert again.status == 200, again.text
    assert (again.json()["id"], again.json()["version"]) == (first.json()["id"], 2)
    assert (calls[memories], calls["TransactWriteItems"]) == (1, 2), calls
    # And a key the client chose is read before its write, as an update is the likelier
    with counted_calls() as calls:
        chosen = api.call("POST", "/memory", json_body={"content": "Tea", "key": "drink"}, **as_user(mind))
    assert chosen.status == 201 and (calls[memories], calls["TransactWriteItems"]) == (1, 1), calls
    assert sorted(m["version"] for m in listed(api, mind)) == [1, 2]


def test_a_null_category_or_key_is_refused_naming_it(api: Api, mind: MindHandle) -> None:
    answer = api.call("POST", "/memory", json_body={"content": "x", "key": None}, **as_user(mind))
    assert_error(answer, 422, field="key", rule="not_null")


def test_rewrites_within_one_millisecond_keep_the_tag_copies_whole(
    api: Api, mind: MindHandle, dynamo: Any, frozen_clock: None
) -> None:
    # Given a tagged memory, rewritten (in a mind whose agents' rewrites apply), updated and verified
    # all in the same millisecond
    unverify = {"agent_writes_to_verified": "unverify"}
    assert api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=unverify).status == 200
    memory = api.store(mind, tags=["a", "b"]).json()
    assert api.store(mind, as_agent=True, content="again", tags=["a", "b"]).status == 200
    assert put(api, mind, memory["id"], {"tags": ["b", "c"]}).status == 200
    verified = api.call("POST", f"/memory/{memory['id']}/verify", **as_user(mind))
    assert verified.status == 200, verified.text
    # Then each tag copy matches the memory as it is now
    copies = mind_items(dynamo, mind.id)["tag"]
    assert sorted(c["sk"].split("#")[1] for c in copies) == ["01:b", "01:c"]
    assert {c["memory"]["version"] for c in copies} == {4}


def test_the_largest_memory_the_rules_allow_can_be_stored_and_rewritten(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a memory at every limit: 32 KiB of content and 20 tags of 64 characters, in a mind whose
    # agents' rewrites of verified memories apply
    unverify = {"agent_writes_to_verified": "unverify"}
    assert api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=unverify).status == 200
    content = "x" * (32 * 1024)
    first_tags = [f"{i:02d}" + "a" * 62 for i in range(20)]
    other_tags = [f"{i:02d}" + "b" * 62 for i in range(20)]
    created = api.store(mind, content=content, tags=first_tags)
    assert created.status == 201, created.text
    # When an agent rewrites it with 20 other tags (every tag copy and counter changes at once)
    rewritten = api.store(mind, as_agent=True, content=content[:-1] + "x", tags=other_tags)
    # Then the write goes through whole
    assert rewritten.status == 200, rewritten.text
    assert rewritten.json()["tags"] == other_tags and rewritten.json()["verified"] is False
    copies = mind_items(dynamo, mind.id)["tag"]
    assert len(copies) == 20 and all("b" * 62 in c["sk"] for c in copies)
    # And deleting it removes everything in one go
    assert api.call("DELETE", f"/memory/{created.json()['id']}", **as_user(mind)).status == 204
    assert mind_items(dynamo, mind.id) == {"memory": [], "pointer": [], "tag": []}


# ---------------------------------------------------------------- read


def test_an_expired_memory_is_still_readable_by_id(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a memory whose expiry has passed since it was stored, and one whose has not
    expired = api.store(mind, key="old_plan", expires_at=SOON).json()
    current = api.store(mind, key="new_plan", expires_at=FUTURE).json()
    movable_clock.advance(hours=2)
    # Then both read by id, the first flagged expired
    assert get(api, mind, expired["id"])["expired"] is True
    assert get(api, mind, expired["id"])["expires_at"] == SOON
    assert get(api, mind, current["id"])["expired"] is False
    # But a list leaves the expired one out unless asked
    assert [m["key"] for m in listed(api, mind)] == ["new_plan"]
    assert {m["key"] for m in listed(api, mind, include_expired="true")} == {"old_plan", "new_plan"}


def test_an_unknown_id_is_a_404(api: Api, mind: MindHandle) -> None:
    for memory_id in ("mem_doesnotexist", "not-an-id", "m_" + mind.id):
        assert_error(api.call("GET", f"/memory/{memory_id}", **as_user(mind)), 404)


# ---------------------------------------------------------------- update


def test_put_changes_only_the_fields_it_names(api: Api, mind: MindHandle) -> None:
    memory = api.store(mind, tags=["a"], priority="high", expires_at=FUTURE).json()
    answer = put(api, mind, memory["id"], {"content": "Lives in Paris", "confidence": 0.8})
    assert answer.status == 200, answer.text
    updated = answer.json()
    assert (updated["content"], updated["confidence"]) == ("Lives in Paris", 0.8)
    assert (updated["tags"], updated["priority"], updated["expires_at"]) == (
        ["a"],
        "high",
        memory["expires_at"],
    )
    assert (updated["id"], updated["created_at"], updated["version"]) == (
        memory["id"],
        memory["created_at"],
        2,
    )
    assert get(api, mind, memory["id"]) == updated


def test_put_expires_at_null_clears_it(api: Api, mind: MindHandle, movable_clock: MovableClock) -> None:
    memory = api.store(mind, expires_at=SOON).json()
    movable_clock.advance(hours=2)
    cleared = put(api, mind, memory["id"], {"expires_at": None}).json()
    assert (cleared["expires_at"], cleared["expired"]) == (None, False)
    assert [m["id"] for m in listed(api, mind)] == [memory["id"]]


def test_put_with_a_current_if_match_succeeds_and_a_stale_one_is_a_412(api: Api, mind: MindHandle) -> None:
    memory = api.store(mind).json()
    # A current version, bare or as an ETag-style quoted value, is accepted
    assert put(api, mind, memory["id"], {"content": "v2"}, **{"If-Match": "1"}).json()["version"] == 2
    assert put(api, mind, memory["id"], {"content": "v3"}, **{"If-Match": '"2"'}).json()["version"] == 3
    # A stale one is refused with 412 and changes nothing
    error = assert_error(put(api, mind, memory["id"], {"content": "lost"}, **{"If-Match": "2"}), 412)
    assert "3" in error["message"]
    assert get(api, mind, memory["id"])["content"] == "v3"


def test_put_with_a_non_numeric_if_match_is_a_400(api: Api, mind: MindHandle) -> None:
    memory = api.store(mind).json()
    assert_error(put(api, mind, memory["id"], {"content": "x"}, **{"If-Match": "latest"}), 400)


@pytest.mark.parametrize("change", [{"category": "note"}, {"key": "work_city"}])
def test_put_may_not_change_category_or_key(api: Api, mind: MindHandle, change: dict[str, str]) -> None:
    memory = api.store(mind).json()
    field = next(iter(change))
    assert_error(put(api, mind, memory["id"], change), 422, field=field, rule="immutable")
    # Repeating the current value is harmless
    same = put(api, mind, memory["id"], {field: memory[field], "content": "x"})
    assert same.status == 200, same.text


def test_put_on_a_missing_memory_is_a_404(api: Api, mind: MindHandle) -> None:
    assert_error(put(api, mind, "mem_doesnotexist", {"content": "x"}), 404)


# ---------------------------------------------------------------- delete


def test_delete_is_for_good_and_the_key_comes_back_with_a_new_id(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a tagged memory
    memory = api.store(mind, tags=["a", "b"]).json()
    # When it is deleted
    answer = api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind))
    # Then it is a 204, then a 404, and no trace of it is left
    assert answer.status == 204 and answer.body == b""
    assert_error(api.call("GET", f"/memory/{memory['id']}", **as_user(mind)), 404)
    assert_error(api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind)), 404)
    assert mind_items(dynamo, mind.id) == {"memory": [], "pointer": [], "tag": []}
    assert listed(api, mind) == []
    # And storing the same key again makes a new memory with a new id
    again = api.store(mind, tags=["a"])
    assert again.status == 201 and again.json()["id"] != memory["id"] and again.json()["version"] == 1
    assert_error(api.call("GET", f"/memory/{memory['id']}", **as_user(mind)), 404)


def test_an_agent_may_delete_in_its_own_mind(api: Api, mind: MindHandle) -> None:
    # (an agent's own, unverified memory: its delete of a verified one is a proposal, test_demotions.py)
    memory = api.store(mind, as_agent=True).json()
    assert api.call("DELETE", f"/memory/{memory['id']}", **as_agent(mind)).status == 204


# ---------------------------------------------------------------- verify


def test_verify_records_who_and_when(api: Api, mind: MindHandle, ticking_clock: None) -> None:
    memory = api.store(mind, as_agent=True).json()
    answer = api.call("POST", f"/memory/{memory['id']}/verify", **as_user(mind))
    assert answer.status == 200, answer.text
    verified = answer.json()
    assert (verified["verified"], verified["verified_by"]) == (True, "user-1")
    assert STAMP.match(verified["verified_at"]) and verified["verified_at"] > memory["created_at"]
    assert verified["version"] == 2 and verified["content"] == memory["content"]
    assert get(api, mind, memory["id"]) == verified
    assert_error(api.call("POST", "/memory/mem_doesnotexist/verify", **as_user(mind)), 404)


def test_a_persons_write_says_who_verified_it_and_when(
    api: Api, mind: MindHandle, ticking_clock: None
) -> None:
    # When a person stores a memory, Then it is verified by them at the write, as a verify says
    created = api.store(mind).json()
    assert (created["verified"], created["verified_by"], created["verified_at"]) == (
        True,
        "user-1",
        created["created_at"],
    )
    # When an agent raises its priority (which leaves it verified), Then the stamp stays the person's
    raised = api.call("PUT", f"/memory/{created['id']}", json_body={"priority": "high"}, **as_agent(mind))
    assert raised.status == 200, raised.text
    assert (raised.json()["verified_by"], raised.json()["verified_at"]) == ("user-1", created["verified_at"])
    # When a person edits it, or stores it again by key, or in a batch, Then each write is the new stamp
    edited = put(api, mind, created["id"], {"content": "Lives in Hamburg"}).json()
    assert (edited["verified_by"], edited["verified_at"]) == ("user-1", edited["updated_at"])
    assert edited["verified_at"] > created["verified_at"]
    again = api.store(mind, content="Lives in Bonn").json()
    assert (again["verified_by"], again["verified_at"]) == ("user-1", again["updated_at"])
    batch = api.call(
        "POST", "/memory/batch", json_body={"memories": [memory_body(key="desk")]}, **as_user(mind)
    )
    stored = get(api, mind, batch.json()["results"][0]["memory"]["id"])
    assert (stored["verified"], stored["verified_by"], stored["verified_at"]) == (
        True,
        "user-1",
        stored["created_at"],
    )
    # And an agent's own memory has no stamp until a person verifies it
    agents = api.store(mind, key="agents", as_agent=True).json()
    assert (agents["verified"], agents["verified_by"], agents["verified_at"]) == (False, None, None)


# ---------------------------------------------------------------- list


def test_list_is_newest_first(api: Api, mind: MindHandle, ticking_clock: None) -> None:
    for key in ("first", "second", "third"):
        api.store(mind, key=key)
    api.store(mind, key="first", content="replaced")  # a replace does not make it newer
    assert [m["key"] for m in listed(api, mind)] == ["third", "second", "first"]


def test_list_filters(api: Api, mind: MindHandle, ticking_clock: None) -> None:
    # Given memories of every kind
    api.store(mind, key="a", category="fact", tags=["Docker"], priority="high")
    api.store(mind, key="b", category="skill", tags=["python", "docker"], as_agent=True)
    api.store(mind, key="c", category="fact", priority="low", as_agent=True)
    api.store(mind, key="d", category="note", expires_at=clock.to_iso(clock.now()), tags=["docker"])
    verified_id = api.store(mind, key="e", category="skill", as_agent=True).json()["id"]
    api.call("POST", f"/memory/{verified_id}/verify", **as_user(mind))

    def keys(**query: Any) -> list[str]:
        return [m["key"] for m in listed(api, mind, **query)]

    # Then each filter narrows the list, newest first
    assert keys() == ["e", "c", "b", "a"]
    assert keys(category="fact") == ["c", "a"]
    assert keys(tag="docker") == ["b", "a"]
    assert keys(tag="  DOCKER ") == ["b", "a"]
    assert keys(priority="low") == ["c"]
    assert keys(source="agent") == ["e", "c", "b"]
    assert keys(source="user") == ["a"]
    assert keys(verified="false") == ["c", "b"]
    assert keys(verified="true") == ["e", "a"]
    assert keys(include_expired="true") == ["e", "d", "c", "b", "a"]
    assert keys(include_expired="true", tag="docker", category="note") == ["d"]
    assert keys(category="skill", source="agent", verified="true") == ["e"]
    assert keys(category="mistake") == []


def test_pagination_walks_every_memory_once(api: Api, mind: MindHandle, ticking_clock: None) -> None:
    # Given 45 memories
    created = [api.store(mind, key=f"memory_{i:02d}").json()["id"] for i in range(45)]
    # When they are listed 20 at a time, following next_cursor
    pages: list[list[str]] = []
    query: dict[str, Any] = {"limit": 20}
    while True:
        answer = api.call("GET", "/memory", query=query, **as_user(mind))
        assert answer.status == 200, answer.text
        page = answer.json()
        pages.append([m["id"] for m in page["memories"]])
        if page["next_cursor"] is None:
            break
        query = {"limit": 20, "cursor": page["next_cursor"]}
        assert len(pages) < 10
    # Then there are pages of 20, 20 and 5, newest first, with no duplicate and no gap
    assert [len(p) for p in pages] == [20, 20, 5]
    assert [i for p in pages for i in p] == created[::-1]


def test_pagination_with_a_filter_that_skips_most_items(
    api: Api, mind: MindHandle, ticking_clock: None
) -> None:
    tagged = []
    for i in range(30):
        answer = api.store(mind, key=f"m{i}", tags=["rare"] if i % 4 == 0 else ["common"])
        if i % 4 == 0:
            tagged.append(answer.json()["id"])
    seen: list[str] = []
    query: dict[str, Any] = {"limit": 3, "tag": "rare"}
    while True:
        page = api.call("GET", "/memory", query=query, **as_user(mind)).json()
        assert len(page["memories"]) <= 3
        seen += [m["id"] for m in page["memories"]]
        if not page["next_cursor"]:
            break
        query = {**query, "cursor": page["next_cursor"]}
    assert seen == tagged[::-1]


def test_a_selective_filter_reads_a_bounded_amount_per_request_and_still_finds_everything(
    api: Api, mind: MindHandle, ticking_clock: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 30 memories of which only the two oldest carry the tag, and a small read budget
    ids = [
        api.store(mind, key=f"m{i}", tags=["rare"] if i < 2 else ["common"]).json()["id"] for i in range(30)
    ]
    monkeypatch.setattr(reads, "LIST_READ_BUDGET", 8)
    # When the tag is listed, following next_cursor
    seen: list[str] = []
    reads_per_request: list[int] = []
    query: dict[str, Any] = {"limit": 3, "tag": "rare"}
    while True:
        before = tables.reads["query"]
        page = api.call("GET", "/memory", query=query, **as_user(mind)).json()
        reads_per_request.append(tables.reads["query"] - before)
        seen += [m["id"] for m in page["memories"]]
        if not page["next_cursor"]:
            break
        query = {**query, "cursor": page["next_cursor"]}
    # Then no request read much past the budget, the early pages are empty but carry a cursor,
    # and the walk still finds both tagged memories, newest first, once each
    assert max(reads_per_request) <= 8
    assert len(reads_per_request) > 1
    assert seen == ids[:2][::-1]


def test_list_limit_defaults_to_20_and_an_exact_last_page_has_no_cursor(api: Api, mind: MindHandle) -> None:
    for i in range(21):
        api.store(mind, key=f"k{i}")
    first = api.call("GET", "/memory", **as_user(mind)).json()
    assert len(first["memories"]) == 20 and first["next_cursor"]
    rest = api.call("GET", "/memory", query={"cursor": first["next_cursor"]}, **as_user(mind)).json()
    assert len(rest["memories"]) == 1 and rest["next_cursor"] is None
    exact = api.call("GET", "/memory", query={"limit": 21}, **as_user(mind)).json()
    assert len(exact["memories"]) == 21 and exact["next_cursor"] is None
