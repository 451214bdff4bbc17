"""A restore checks what makes a mind consistent before it writes anything (issue 40 item 2,
docs/backup.md "What makes a backup consistent"): ids once in a file, a memory's pending proposal
and what supersedes it resolvable in the same file (else dropped), a pending proposal's and a
revision's memory in the file; and a line whose `kind` is not text is a 422, not a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.core import clock
from synapse.core.ids import new_id
from synapse.memory.proposals import new_proposal_id

from tests.support import backups
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, assert_error, ok

Records = list[dict[str, Any]]


@pytest.fixture
def source(api: Api) -> tuple[Records, dict[str, str]]:
    """A backup's records: a person's memory with an agent's pending proposal, and an agent's memory."""
    mind = api.create_mind("source-owner")
    ids = {
        "home": ok(api.store(mind, key="home_city", content="Lives in Berlin"), 201)["id"],
        "coffee": ok(api.store(mind, as_agent=True, key="coffee", category="preference"), 201)["id"],
    }
    proposal = ok(api.store(mind, as_agent=True, key="home_city", content="Lives in Oslo"), 202)
    ids["proposal"] = proposal["proposal"]["id"]
    return [json.loads(line) for line in backups.backup(api, mind).splitlines()], ids


def _memory_line(records: Records, memory_id: str) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == "memory" and r["memory"]["id"] == memory_id)


def _restore(api: Api, records: Records, who: str = "restorer") -> tuple[Any, MindHandle]:
    target = api.create_mind(who, name="Restored")
    return backups.send(api, target, backups.rebuilt(records), last=True), target


def _memory(api: Api, mind: MindHandle, memory_id: str) -> dict[str, Any]:
    return ok(api.call("GET", f"/memory/{memory_id}", **as_user(mind)))


def _nothing_written(api: Api, mind: MindHandle) -> None:
    listed = ok(api.call("GET", "/memory", **as_user(mind)))
    assert listed["memories"] == [], listed
    assert ok(api.call("GET", f"/minds/{mind.id}", token=mind.jwt))["memory_count"] == 0


def _refused_at(answer: Any, line: int, field: str, rule: str) -> None:
    error = assert_error(answer, 422, field=field, rule=rule)
    assert [d["line"] for d in error["details"]] == [line], error


def test_two_memory_lines_with_one_id_are_refused_and_nothing_is_written(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup with a second memory line holding the coffee memory's id under another key
    records, ids = source
    copy = json.loads(json.dumps(_memory_line(records, ids["coffee"])))
    copy["memory"]["key"] = "coffee_again"
    at = records.index(_memory_line(records, ids["coffee"])) + 1
    records.insert(at, copy)
    # When it is restored
    answer, target = _restore(api, records)
    # Then the second line is refused, naming its id, and nothing of the file is written
    _refused_at(answer, at + 1, "memory.id", "unique")
    _nothing_written(api, target)


def test_a_repeated_id_is_refused_when_its_first_line_came_in_an_earlier_chunk(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose last memory line repeats the id of its first, sent a line per chunk
    records, _ids = source
    first = next(r for r in records if r["kind"] == "memory")
    copy = json.loads(json.dumps(first))
    copy["memory"]["key"] = "zz_last_key"
    at = max(i for i, r in enumerate(records) if r["kind"] == "memory") + 1
    records.insert(at, copy)
    lines = backups.rebuilt(records)
    target = api.create_mind("restorer", name="Restored")
    next_line = 1
    while next_line <= at:  # each chunk: the line the last one held back, and one more
        next_line = ok(backups.send(api, target, lines[next_line - 1 : next_line + 1]))["next_line"]
    # When the chunk with the repeated id comes
    refused = backups.send(api, target, lines[next_line - 1 : next_line + 1])
    # Then it is refused, naming the line, and the memories the earlier chunks wrote stay one each
    _refused_at(refused, at + 1, "memory.id", "unique")
    listed = ok(api.call("GET", "/memory", **as_user(target)))["memories"]
    assert [m["id"] for m in listed].count(first["memory"]["id"]) == 1


def test_two_memory_lines_with_one_key_are_refused(api: Api, source: tuple[Records, dict[str, str]]) -> None:
    # Given a backup with a second memory line under the coffee memory's key, with a new id
    records, ids = source
    copy = json.loads(json.dumps(_memory_line(records, ids["coffee"])))
    copy["memory"]["id"] = new_id("mem_")
    at = records.index(_memory_line(records, ids["coffee"])) + 1
    records.insert(at, copy)
    # When it is restored
    answer, target = _restore(api, records)
    # Then the second line is refused naming its key
    _refused_at(answer, at + 1, "memory.key", "unique")
    _nothing_written(api, target)


def test_a_pending_proposal_the_file_does_not_hold_is_dropped_and_the_memory_can_be_written(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose coffee memory says a proposal the file does not hold is pending on it
    records, ids = source
    _memory_line(records, ids["coffee"])["memory"]["pending_proposal"] = new_proposal_id(clock.now())
    # When it is restored
    answer, target = _restore(api, records)
    # Then the restore is done and the memory carries no mark
    assert ok(answer)["status"] == "done"
    assert _memory(api, target, ids["coffee"])["pending_proposal"] is None
    # And its owner can write to it (it was 429 "too many concurrent writes" for good)
    changed = api.call("PUT", f"/memory/{ids['coffee']}", json_body={"content": "Tea now"}, **as_user(target))
    assert ok(changed)["content"] == "Tea now"
    # And the proposal the file holds still marks its memory, and can be decided
    assert _memory(api, target, ids["home"])["pending_proposal"] == ids["proposal"]
    ok(api.call("POST", f"/proposals/{ids['proposal']}/reject", **as_user(target)))
    assert _memory(api, target, ids["home"])["pending_proposal"] is None


def test_a_pending_proposal_marks_its_memory_even_when_the_memory_line_forgot_it(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose memory line lost its pending proposal's mark, sent a line per chunk
    records, ids = source
    _memory_line(records, ids["home"])["memory"]["pending_proposal"] = None
    target = api.create_mind("restorer", name="Restored")
    lines, next_line = backups.rebuilt(records), 1
    # When it is restored chunk by chunk (the proposal comes long after its memory)
    while True:
        part = lines[next_line - 1 : next_line + 1]
        answer = ok(backups.send(api, target, part, last=next_line + 1 >= len(lines)))
        if answer["status"] == "done":
            break
        next_line = answer["next_line"]
    # Then the memory is marked by it, as the write that made the proposal marked it
    assert _memory(api, target, ids["home"])["pending_proposal"] == ids["proposal"]
    # And the memory can be written, and the proposal decided, as in the mind backed up
    changed = api.call(
        "PUT", f"/memory/{ids['home']}", json_body={"content": "Lives in Rome"}, **as_user(target)
    )
    assert ok(changed)["pending_proposal"] == ids["proposal"]
    ok(api.call("POST", f"/proposals/{ids['proposal']}/reject", **as_user(target)))
    assert _memory(api, target, ids["home"])["pending_proposal"] is None


def test_a_pending_proposal_for_a_memory_the_file_does_not_hold_is_refused(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose pending proposal names (and holds) a memory no memory line holds
    records, _ids = source
    proposal = next(r for r in records if r["kind"] == "proposal")
    stranger = new_id("mem_")
    proposal["memory_id"] = proposal["memory"]["id"] = stranger
    # When it is restored
    answer, target = _restore(api, records)
    # Then the proposal's line is refused naming its memory
    _refused_at(answer, records.index(proposal) + 1, "memory_id", "reference")
    _nothing_written(api, target)


def test_two_pending_proposals_for_one_memory_are_refused(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup with a second pending proposal for the same memory
    records, _ids = source
    proposal = next(r for r in records if r["kind"] == "proposal")
    second = {**json.loads(json.dumps(proposal)), "id": new_proposal_id(clock.now())}
    records.insert(records.index(proposal) + 1, second)
    # When it is restored
    answer, _ = _restore(api, records)
    # Then the second is refused
    _refused_at(answer, records.index(second) + 1, "memory_id", "reference")


def test_a_revision_of_a_memory_the_file_neither_holds_nor_deletes_is_refused(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose revision names a memory no line holds, and no `deleted` line follows
    records, ids = source
    revision = next(r for r in records if r["kind"] == "revision" and r["memory_id"] == ids["coffee"])
    revision["memory_id"] = revision["memory"]["id"] = new_id("mem_")
    # When it is restored
    answer, target = _restore(api, records)
    # Then the revision is refused naming its memory
    _refused_at(answer, records.index(revision) + 1, "memory_id", "reference")
    _nothing_written(api, target)


def test_a_superseded_by_naming_a_memory_of_the_file_is_kept_even_when_it_comes_later(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup where home (fact, first) is superseded by coffee (preference, a later line)
    records, ids = source
    at = clock.to_iso(clock.now())
    _memory_line(records, ids["home"])["memory"].update(superseded_by=ids["coffee"], superseded_at=at)
    target = api.create_mind("restorer", name="Restored")
    lines, next_line = backups.rebuilt(records), 1
    # When it is restored a line per chunk (coffee comes in a later chunk than home)
    while True:
        part = lines[next_line - 1 : next_line + 1]
        answer = ok(backups.send(api, target, part, last=next_line + 1 >= len(lines)))
        if answer["status"] == "done":
            break
        next_line = answer["next_line"]
    # Then home is superseded by coffee, as the file says
    home = _memory(api, target, ids["home"])
    assert (home["superseded_by"], home["superseded_at"]) == (ids["coffee"], at)


def test_a_superseded_by_naming_no_memory_of_the_file_is_dropped(
    api: Api, source: tuple[Records, dict[str, str]]
) -> None:
    # Given a backup whose coffee memory says a memory the file does not hold superseded it
    records, ids = source
    gone = {"superseded_by": new_id("mem_"), "superseded_at": clock.to_iso(clock.now())}
    _memory_line(records, ids["coffee"])["memory"].update(gone)
    # When it is restored
    answer, target = _restore(api, records)
    # Then the restore is done and the memory is not superseded (nothing replaced it)
    assert ok(answer)["status"] == "done"
    coffee = _memory(api, target, ids["coffee"])
    assert (coffee["superseded_by"], coffee["superseded_at"]) == (None, None)


def test_a_memory_superseded_by_itself_is_refused(api: Api, source: tuple[Records, dict[str, str]]) -> None:
    records, ids = source
    line = _memory_line(records, ids["coffee"])
    line["memory"].update(superseded_by=ids["coffee"], superseded_at=clock.to_iso(clock.now()))
    answer, _ = _restore(api, records)
    _refused_at(answer, records.index(line) + 1, "memory.superseded_by", "reference")


@pytest.mark.parametrize("kind", [{"is": "memory"}, ["memory"], 7, None, True])
def test_a_line_whose_kind_is_not_text_is_refused_not_a_500(
    api: Api, source: tuple[Records, dict[str, str]], kind: Any
) -> None:
    # Given a backup whose second line's kind is an object, a list, a number, null or a boolean
    records, _ = source
    records[1]["kind"] = kind
    lines = [*backups.rebuilt(records[:1]), json.dumps({**records[1], "n": 2}).encode()]
    # When it is restored
    target = api.create_mind("restorer", name="Restored")
    answer = backups.send(api, target, lines, last=True)
    # Then the line is refused naming its kind
    _refused_at(answer, 2, "kind", "kind")
