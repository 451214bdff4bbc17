"""The indexer handler fed with real stream records from moto: idempotent, version-gated, one
generation per mind per batch, partial batch failures, and what deleting a mind does to its files."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import boto3
import pytest
from synapse.index import generations as index_generations
from synapse.index import readers, rebuild
from synapse.index.generations import current_generation
from synapse.storage import tables

import infra.rebuild
from infra import template
from infra.gateway import LambdaContext, load_handler
from infra.stream_pump import StreamReader, indexer_function
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.indexing import LiveRow, live_rows
from tests.support.settings import configure_fixture as configure_fixture

Records = list[dict[str, Any]]
EVENTS = template.ROOT / "events"


@pytest.fixture
def stream(dynamo: Any, index_root: Path) -> StreamReader:
    return StreamReader(dynamo, boto3.client("dynamodbstreams", region_name="us-east-1"), "test-memories")


def deliver(records: Records) -> dict[str, Any]:
    handler = load_handler(*indexer_function())
    answer: dict[str, Any] = handler({"Records": records}, LambdaContext("indexer"))
    return answer


def memory_records(records: Records) -> Records:
    return [r for r in records if r["dynamodb"]["Keys"]["sk"]["S"].startswith("MEM#")]


def index_rows(mind_id: str, base: Path) -> list[LiveRow]:
    generation = current_generation(base / mind_id)
    assert generation is not None
    db = readers.open_generation(generation)
    try:
        return live_rows(db)
    finally:
        db.close()


def clean_rebuild_rows(mind_id: str, tmp_path: Path) -> list[LiveRow]:
    clean = tmp_path / "clean"
    rebuild.rebuild(mind_id, base=clean)
    return index_rows(mind_id, clean)


def generations(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("gen-*.sqlite"))


def history(api: Api, mind: MindHandle) -> None:
    """Creates, replacements, updates, a delete, and a re-create of a deleted key (a new id)."""
    stored = [api.store(mind, key=f"k{i}", content=f"memory number {i}", tags=["t"]).json() for i in range(5)]
    api.store(mind, key="k1", content="memory one replaced", tags=["x", "y"])
    api.call("PUT", f"/memory/{stored[2]['id']}", json_body={"priority": "high"}, **as_agent(mind))
    api.call("PUT", f"/memory/{stored[2]['id']}", json_body={"content": "Schäfer"}, **as_agent(mind))
    api.call("DELETE", f"/memory/{stored[3]['id']}", **as_user(mind))  # an agent's would be a proposal
    api.call("DELETE", f"/memory/{stored[4]['id']}", **as_user(mind))
    api.store(mind, key="k4", content="memory four is back with a new id")


# ---------------------------------------------------------------- idempotent, version-gated


def test_replaying_a_batch_twice_equals_a_clean_rebuild(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path
) -> None:
    # Given a history of writes and its stream records
    mind = api.create_mind()
    history(api, mind)
    records = stream.poll()
    # When the same batch is delivered twice
    assert deliver(records) == {"batchItemFailures": []}
    first = generations(index_root / mind.id)
    assert deliver(records) == {"batchItemFailures": []}
    # Then the index equals one rebuilt from the table, and the replay published nothing new
    assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path)
    assert generations(index_root / mind.id) == first == ["gen-000001.sqlite"]


def test_old_images_after_new_ones_change_nothing(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path
) -> None:
    mind = api.create_mind()
    history(api, mind)
    records = memory_records(stream.poll())
    # Delivered one record per batch, in order, then every record again newest first
    for record in records:
        deliver([record])
    for record in reversed(records):
        deliver([record])
    assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_delivery_order_converges_to_the_table(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path, seed: int
) -> None:
    mind = api.create_mind()
    history(api, mind)
    records = memory_records(stream.poll())
    shuffled = random.Random(seed).sample(records, len(records))
    for start in range(0, len(shuffled), 3):
        deliver(shuffled[start : start + 3])
    assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path)


def test_a_poison_record_is_reported_and_the_others_applied(
    api: Api, stream: StreamReader, index_root: Path
) -> None:
    mind = api.create_mind()
    api.store(mind, key="a", content="first")
    api.store(mind, key="b", content="second")
    good = memory_records(stream.poll())
    poison = copy.deepcopy(good[0])
    del poison["dynamodb"]["NewImage"]["id"]
    poison["dynamodb"]["SequenceNumber"] = "999"
    answer = deliver([good[0], poison, good[1]])
    assert answer == {"batchItemFailures": [{"itemIdentifier": "999"}]}
    assert {row.key for row in index_rows(mind.id, index_root)} == {"a", "b"}


def test_a_record_for_an_unsafe_mind_id_is_refused(stream: StreamReader, api: Api, index_root: Path) -> None:
    mind = api.create_mind()
    api.store(mind, key="a", content="first")
    (record,) = memory_records(stream.poll())
    evil = copy.deepcopy(record)
    for part in (evil["dynamodb"]["Keys"], evil["dynamodb"]["NewImage"]):
        part["pk"] = {"S": "../../etc"}
    evil["dynamodb"]["NewImage"]["mind_id"] = {"S": "../../etc"}
    answer = deliver([evil])
    assert answer == {"batchItemFailures": [{"itemIdentifier": record["dynamodb"]["SequenceNumber"]}]}
    assert not (index_root.parent / "etc").exists()


def test_one_generation_per_mind_per_batch(api: Api, stream: StreamReader, index_root: Path) -> None:
    first, second = api.create_mind("user-1"), api.create_mind("user-2")
    for i in range(4):
        api.store(first, key=f"a{i}", content="one")
        api.store(second, key=f"b{i}", content="two")
    deliver(stream.poll())
    assert generations(index_root / first.id) == ["gen-000001.sqlite"]
    assert generations(index_root / second.id) == ["gen-000001.sqlite"]
    assert len(index_rows(first.id, index_root)) == len(index_rows(second.id, index_root)) == 4


# ---------------------------------------------------------------- minds going away


def test_deleting_a_mind_removes_its_index_and_late_replays_do_not_bring_it_back(
    api: Api, stream: StreamReader, index_root: Path
) -> None:
    mind = api.create_mind()
    api.store(mind, key="a", content="first")
    before = stream.poll()
    deliver(before)
    assert (index_root / mind.id).is_dir()
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    deliver(stream.poll())
    assert not (index_root / mind.id).exists()
    deliver(before)  # an old batch delivered again after the mind is gone
    assert not (index_root / mind.id).exists()


def test_the_rebuild_command_rebuilds_from_the_table(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mind = api.create_mind()
    history(api, mind)
    # The index was lost: nothing was ever delivered
    assert infra.rebuild.main([mind.id]) == 0
    assert "4 memories indexed" in capsys.readouterr().out
    assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path)
    assert infra.rebuild.main(["m_doesNotExist0000000000"]) == 1


def test_the_sample_events_index_and_rebuild_their_mind(dynamo: Any, index_root: Path) -> None:
    # Given the mind the samples name exists (its memory exists only in the sample stream records)
    sample = json.loads((EVENTS / "indexer.json").read_text())
    mind_id = sample["Records"][0]["dynamodb"]["Keys"]["pk"]["S"]
    dynamo.put_item(TableName="test-minds", Item=tables.dump({**tables.mind_key(mind_id), "id": mind_id}))
    # When the indexer gets events/indexer.json (an INSERT, then a MODIFY to version 2)
    assert deliver(sample["Records"]) == {"batchItemFailures": []}
    # Then the index holds version 2
    (row,) = index_rows(mind_id, index_root)
    assert row.version == 2
    # And events/rebuild_index.json rebuilds the mind from the table (where that memory is absent)
    rebuild_index = load_handler(template.ROOT / "functions" / "rebuild_index", "app.handler")
    answer = rebuild_index(json.loads((EVENTS / "rebuild_index.json").read_text()), LambdaContext("rebuild"))
    assert (answer["status"], answer["indexed"], answer["generation"]) == ("rebuilt", 0, "gen-000002.sqlite")


def test_a_sweep_removes_only_the_indexes_of_minds_that_are_gone(
    api: Api, stream: StreamReader, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two indexed minds, one of which had every memory deleted before it was itself deleted
    kept, gone = api.create_mind("user-1"), api.create_mind("user-2")
    api.store(kept, key="a", content="stays")
    doomed = api.store(gone, key="a", content="goes").json()
    deliver(stream.poll())
    api.call("DELETE", f"/memory/{doomed['id']}", **as_user(gone))
    deliver(stream.poll())
    assert api.call("DELETE", f"/minds/{gone.id}", token=gone.jwt).status == 204
    deliver(stream.poll())  # no memory of it is left to delete: the indexer sees nothing
    assert (index_root / gone.id).is_dir()
    # When the sweep runs
    assert infra.rebuild.main(["--sweep"]) == 0
    # Then only the deleted mind's index is gone
    assert gone.id in capsys.readouterr().out
    assert not (index_root / gone.id).exists() and (index_root / kept.id).is_dir()


def test_a_batch_takes_its_minds_writer_locks_in_one_sorted_order(
    api: Api, stream: StreamReader, index_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch whose records name three minds, the last-sorted mind's records first
    minds = sorted((api.create_mind(name=f"Mind {n}") for n in range(3)), key=lambda m: m.id)
    for mind in reversed(minds):
        api.store(mind, key="k", content=f"in {mind.id}")
    records = memory_records(stream.poll())
    assert [r["dynamodb"]["Keys"]["pk"]["S"] for r in records] == [m.id for m in reversed(minds)]
    # When the indexer applies it, noting the order in which it takes the writer locks
    taken: list[str] = []
    real_lock = index_generations.writer_lock

    def noting(folder: Path) -> Any:
        taken.append(folder.name)
        return real_lock(folder)

    monkeypatch.setattr(index_generations, "writer_lock", noting)
    assert deliver(records) == {"batchItemFailures": []}
    # Then it took them in sorted mind order (the one order every concurrent batch shares, so two
    # batches holding the same minds never wait on each other in a cycle), and indexed every mind
    assert taken == sorted(taken) and len(taken) == 3
    for mind in minds:
        assert [row.key for row in index_rows(mind.id, index_root)] == ["k"]
