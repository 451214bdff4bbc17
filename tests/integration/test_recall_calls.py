"""Recall's DynamoDB round trips (issue 23 item 6): few calls, made in parallel, and an answer byte for
byte what it was before the calls were cut."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from synapse.core import clock
from synapse.index import readers
from synapse.memory import expiry, history, sweep
from synapse.minds import heads, minds
from synapse.recall import reads, text
from synapse.recall.query import RecallQuery
from synapse.storage import tables

from infra.stream_pump import Pump
from tests.integration.test_template import _dynamodb_calls, _not_granted
from tests.support import moto_tables, recall_matrix
from tests.support.api import Api, MindHandle
from tests.support.calls import counted_calls
from tests.support.clock import EXPIRY_START, MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.races import dynamodb_hook
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MEMORIES


def test_recall_matrix_answers_byte_for_byte_what_it_did(api: Api, moved: MovableClock, pump: Pump) -> None:
    # Given minds of every priority, verification, category, tag and expiry mix, fresh, expired not
    # swept, swept, and larger than a page
    # When each is recalled with and without filters, budgets and q, as text and JSON
    found = recall_matrix.answers(api, moved, pump)
    if os.environ.get("SYNAPSE_RECORD_RECALL_MATRIX"):
        recall_matrix.record(found)
        pytest.skip("recorded")
    # Then every answer is what the recall code before issue 23 item 6 gave
    expected = recall_matrix.recorded()
    assert found.keys() == expected.keys()
    for state, cases in expected.items():
        for case, was in zip(found[state], cases, strict=True):
            assert case == was, (state, was["query"])


def _recall_calls(mind_id: str, **query: Any) -> tuple[Counter[str], int, text.Recall]:
    """The DynamoDB calls, items read and answer of one recall, from the layer (so no rate-limit
    write, which the request makes before recall and leaves as it is)."""
    before = sum(tables.reads.values())
    with counted_calls() as calls:
        answer = reads.recall_of(mind_id, RecallQuery(**query))
    return calls, sum(tables.reads.values()) - before, answer


DEFAULT_CALLS = {"Query": 1, "Query:mind_expiring": 1, "Query:recall": 1}
_typical: dict[str, Any] = {}  # the typical mind and moto's tables just after it, once per process


@pytest.fixture
def typical(api: Api, moved: MovableClock, monkeypatch: pytest.MonkeyPatch) -> MindHandle:
    """`recall_matrix.typical_mind`, stored through the API by the first test of the process; each
    later one starts from a deep copy of the tables as they were just after (no recall had healed or
    written anything yet), its clock where typical_mind leaves it, and history's per-mind cache
    empty (the mind's id is the same in every test)."""
    monkeypatch.setattr(history, "_retention_cache", {})
    mind = moto_tables.built_once(_typical, lambda: recall_matrix.typical_mind(api, moved))
    moved.at = EXPIRY_START + timedelta(days=1)
    return mind


def test_a_default_recall_of_a_typical_mind_makes_three_calls(typical: MindHandle) -> None:
    # Given a mind of 100 memories: six categories, low ones, 20 expired the sweep has not taken out
    mind = typical
    # When an agent recalls it without filters
    calls, read, answer = _recall_calls(mind.id)
    # Then it takes three calls (before: ten): head and counters, the expired not swept, one page of
    # the recall index holding critical to low
    assert calls == DEFAULT_CALLS
    assert answer.mind_name == "Typical mind" and answer.total == 80 and not answer.summarised
    # And it reads no more than before: 100 memories, 6 counters and the head, the 20 expired
    assert read <= 100 + 7 + 20


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"categories": frozenset({"project"})}, {"Query:category_recall": 1}),
        ({"categories": frozenset({"project", "fact"})}, {"Query:category_recall": 2}),
        ({"tag": "docker"}, {"GetItem:test-minds": 1, "Query": 2, "Query:category_recall": 0}),
        ({"tag": "work", "categories": frozenset({"fact"})}, {"GetItem:test-minds": 1, "Query": 2}),
    ],
    ids=["one-category", "two-categories", "tag", "tag-and-category"],
)
def test_a_filtered_recall_of_a_typical_mind_makes_one_call_per_stream_beside_the_header(
    typical: MindHandle, query: dict[str, Any], expected: dict[str, int]
) -> None:
    # Given the typical mind
    mind = typical
    # When it is recalled for categories or a tag
    calls, _, _ = _recall_calls(mind.id, **query)
    # Then a category costs one read of its index (critical to low); a tag, whose counters do not sit
    # by the head, one read of its copies and the Minds item for the name: 3, 4, 4 and 4 calls
    base = {"Query": 1, "Query:mind_expiring": 1} | ({} if "tag" in query else {"Query:category_recall": 0})
    assert +calls == +Counter({**base, **expected}) and "Query:recall" not in calls


def test_a_recall_for_q_searches_beside_the_other_calls(
    api: Api, moved: MovableClock, pump: Pump, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the typical mind, indexed for search, and the search index's opens counted
    mind = recall_matrix.typical_mind(api, moved)
    pump.run_once()
    opened: list[Path] = []
    open_generation = readers.open_generation

    def counted_open(path: Path) -> sqlite3.Connection:
        opened.append(path)
        return open_generation(path)

    monkeypatch.setattr(readers, "open_generation", counted_open)
    # When it is recalled twice for the user's message
    calls, _, answer = _recall_calls(mind.id, q="docker deployment")
    again = _recall_calls(mind.id, q="docker deployment")[2]
    # Then the search's one BatchGetItem comes on top of the three calls
    assert calls == {**DEFAULT_CALLS, "BatchGetItem": 1} and answer.relevant == again.relevant != ()
    # And the search ran on the caller's thread, whose open reader the second recall reused
    assert len(opened) == 1


def test_the_header_the_expired_and_the_first_page_are_read_at_the_same_time(typical: MindHandle) -> None:
    # Given the typical mind, and DynamoDB answering no read before three are in flight together
    mind = typical
    together = threading.Barrier(3, timeout=30)

    def wait_for_the_others(**_: Any) -> None:
        together.wait()

    # When it is recalled
    with dynamodb_hook("before-call.dynamodb.Query", wait_for_the_others):
        _, _, answer = _recall_calls(mind.id)
    # Then it answered: the three queries were made in parallel (one after another would break the
    # barrier), and nothing after them was waited for
    assert answer.total == 80 and not together.broken


def test_a_big_minds_recall_reads_its_low_memories_apart_only_when_the_answer_needs_them(
    api: Api, moved: MovableClock
) -> None:
    # Given a mind of 300 memories, 84 low
    mind = recall_matrix.typical_mind(api, moved, 300)
    # When it is recalled by default, and with a limit its others fill
    default, default_read, _ = _recall_calls(mind.id)
    small, small_read, answer = _recall_calls(mind.id, limit=5)
    # Then each reads one page of the index from the start and the low ones apart, for the summary
    assert default == small == {"Query": 1, "Query:mind_expiring": 1, "Query:recall": 2}
    assert answer.summarised and answer.low_total > 0
    # And the index reads stay within a page each (a page is what the answer can use)
    expired_and_counters = 60 + 7
    assert small_read <= expired_and_counters + 2 * 6
    assert default_read <= expired_and_counters + 2 * reads.PAGE


# ---------------------------------------------------------------- the head item


def _head(dynamo: Any, mind_id: str) -> dict[str, Any] | None:
    answer = dynamo.get_item(TableName=MEMORIES, Key=tables.dump(heads.head_key(mind_id)))
    return tables.load(answer["Item"]) if "Item" in answer else None


def test_a_mind_created_before_heads_recalls_its_name_and_heals(api: Api, dynamo: Any) -> None:
    # Given a mind whose head item is missing, as for every mind created before heads
    mind = api.create_mind(name="Old mind")
    assert _head(dynamo, mind.id) == {"pk": mind.id, "sk": heads.HEAD_SK, "name": "Old mind"}
    dynamo.delete_item(TableName=MEMORIES, Key=tables.dump(heads.head_key(mind.id)))
    # When it is recalled
    calls, _, answer = _recall_calls(mind.id)
    # Then the name is read from the Minds item and the head written, once
    assert answer.mind_name == "Old mind" and _head(dynamo, mind.id) is not None
    assert calls["GetItem:test-minds"] == 1 and calls["TransactWriteItems"] == 1
    calls, _, answer = _recall_calls(mind.id)
    assert answer.mind_name == "Old mind" and calls == DEFAULT_CALLS


def test_a_rename_shows_at_once_in_recall(api: Api) -> None:
    # Given a mind recalled under its first name
    mind = api.create_mind(name="First")
    assert _recall_calls(mind.id)[2].mind_name == "First"
    # When its owner renames it
    renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "Second"})
    assert renamed.status == 200, renamed.text
    # Then the next recall, by text too, carries the new name, still in three calls
    calls, _, answer = _recall_calls(mind.id)
    assert answer.mind_name == "Second" and answer.text.startswith("Mind: Second\n")
    assert calls == DEFAULT_CALLS


def test_a_heal_racing_a_rename_never_brings_the_old_name_back(api: Api, dynamo: Any) -> None:
    # Given a mind without a head, and its owner renaming it just after recall read the old name
    mind = api.create_mind(name="Before")
    dynamo.delete_item(TableName=MEMORIES, Key=tables.dump(heads.head_key(mind.id)))
    renamed: list[bool] = []

    def rename_once(**_: Any) -> None:
        if not renamed:
            renamed.append(True)
            minds.update_mind("user-1", mind.id, name="After")

    # When recall reads the Minds item, the rename commits, then recall heals
    with dynamodb_hook("after-call.dynamodb.GetItem", rename_once):
        stale = _recall_calls(mind.id)[2]
    # Then that recall shows the name it read, but the head keeps the rename's, and so does recall
    assert renamed and stale.mind_name == "Before"
    assert _head(dynamo, mind.id) == {"pk": mind.id, "sk": heads.HEAD_SK, "name": "After"}
    assert _recall_calls(mind.id)[2].mind_name == "After"


def test_no_heal_writes_a_head_into_a_deleted_mind(api: Api, dynamo: Any) -> None:
    # Given a mind deleted (its Minds item gone before its partition is purged)
    mind = api.create_mind(name="Gone")
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When a recall that read the name before the deletion heals afterwards
    heads.heal(mind.id, "Gone")
    # Then nothing is written
    assert _head(dynamo, mind.id) is None


def test_the_heal_stays_within_the_policies_of_the_functions_that_recall(api: Api, dynamo: Any) -> None:
    # Given a mind without a head
    mind = api.create_mind(name="Old mind")
    dynamo.delete_item(TableName=MEMORIES, Key=tables.dump(heads.head_key(mind.id)))
    # When it is recalled
    with _dynamodb_calls() as needs:
        reads.recall_of(mind.id, RecallQuery())
    # Then what the heal took is granted to the recall and MCP functions
    assert ("dynamodb:PutItem", "MemoriesTable") in needs
    assert _not_granted("RecallFunction", needs) == [] and _not_granted("McpFunction", needs) == []


# ---------------------------------------------------------------- mind_expiring


def _expiring_index(dynamo: Any, mind_id: str) -> list[str]:
    answer = dynamo.query(
        TableName=MEMORIES,
        IndexName=expiry.MIND_INDEX,
        KeyConditionExpression="pk = :mind",
        ExpressionAttributeValues=tables.values(mind=mind_id),
    )
    return sorted(str(tables.load(item)["sk"]) for item in answer["Items"])


def _store(api: Api, mind: MindHandle, **fields: Any) -> None:
    answer = api.store(mind, **fields)
    assert answer.status == 201, answer.text


def test_an_expired_memory_counts_off_until_the_sweep_takes_it_out_of_mind_expiring(
    api: Api, dynamo: Any, moved: MovableClock
) -> None:
    # Given a mind with a memory that expires in a minute, one next week and one without expiry
    mind = api.create_mind()
    _store(api, mind, key="soon", expires_at=clock.to_iso(moved.at + timedelta(minutes=1)))
    _store(api, mind, key="later", expires_at=clock.to_iso(moved.at + timedelta(days=7)))
    _store(api, mind, key="always")
    assert _expiring_index(dynamo, mind.id) == ["MEM#fact#later", "MEM#fact#soon"]
    # When the minute passes, before the sweep
    moved.advance(minutes=2)
    # Then recall leaves it out of its counts though the counters still count it
    assert _recall_calls(mind.id)[2].total == 2
    # And once swept, it is out of mind_expiring (and the counters), and the counts stay right
    sweep.run(at=moved.at)
    assert _expiring_index(dynamo, mind.id) == ["MEM#fact#later"]
    assert _recall_calls(mind.id)[2].total == 2


def test_a_legacy_bare_hour_bucket_is_counted_off(api: Api, dynamo: Any, moved: MovableClock) -> None:
    # Given an expired memory written before the shards: its bucket is the bare hour
    mind = api.create_mind()
    expires = moved.at + timedelta(minutes=1)
    _store(api, mind, key="legacy", tags=["old"], expires_at=clock.to_iso(expires))
    _store(api, mind, key="live", tags=["old"])
    dynamo.update_item(
        TableName=MEMORIES,
        Key=tables.dump({"pk": mind.id, "sk": tables.memory_sk("fact", "legacy")}),
        UpdateExpression="SET expiry_bucket = :hour",
        ExpressionAttributeValues=tables.values(hour=expiry.bucket_key(expiry.bucket_of(expires), None)),
    )
    # When it has expired
    moved.advance(minutes=2)
    # Then recall counts it off, with and without the tag
    assert _recall_calls(mind.id)[2].total == 1
    assert _recall_calls(mind.id, tag="old")[2].total == 1
