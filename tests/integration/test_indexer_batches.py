"""The indexer's batch path with minds written at once: the same documents as one at a time, each
mind's records in stream order, a failing mind reported without costing the others their records,
at most one writer lock per thread and a bounded number of minds in flight."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest
from synapse.index import generations as index_generations
from synapse.index.documents import Change
from synapse.index.writer import Writer

from infra.stream_pump import StreamReader
from tests.integration.test_indexer import clean_rebuild_rows, deliver, history, index_rows, memory_records
from tests.support.api import Api, MindHandle
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def stream(dynamo: Any, index_root: Path) -> StreamReader:
    return StreamReader(dynamo, boto3.client("dynamodbstreams", region_name="us-east-1"), "test-memories")


def minds_with_history(api: Api, count: int) -> list[MindHandle]:
    minds = [api.create_mind(name=f"Mind {n}") for n in range(count)]
    for mind in minds:
        history(api, mind)
    return minds


def sequences(records: list[dict[str, Any]], mind: MindHandle) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == mind.id]


def test_a_batch_of_many_minds_indexes_each_as_a_clean_rebuild_would(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path
) -> None:
    # Given five minds' creates, updates and deletes interleaved in one batch
    minds = minds_with_history(api, 5)
    records = memory_records(stream.poll())
    # When the indexer applies it
    assert deliver(records) == {"batchItemFailures": []}
    # Then every mind's index holds what a rebuild from the table holds, in one new generation each
    for mind in minds:
        assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path / mind.id)
        assert sorted(p.name for p in (index_root / mind.id).glob("gen-*.sqlite")) == ["gen-000001.sqlite"]


def test_a_minds_records_are_applied_in_stream_order(
    api: Api, stream: StreamReader, index_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch with several records of each of three minds
    minds = minds_with_history(api, 3)
    records = memory_records(stream.poll())
    # When the indexer applies it, noting the order of the changes each mind's writer gets
    applied: dict[str, list[tuple[str, int]]] = {}
    real_apply = Writer.apply

    def noting(self: Writer, change: Change) -> bool:
        applied.setdefault(change.mind_id, []).append((change.memory_id, change.version))
        return real_apply(self, change)

    monkeypatch.setattr(Writer, "apply", noting)
    assert deliver(records) == {"batchItemFailures": []}
    # Then each mind got its records in the order of the stream
    for mind in minds:
        ordered = [r for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == mind.id]
        images = [r["dynamodb"].get("NewImage") or r["dynamodb"]["OldImage"] for r in ordered]
        assert applied[mind.id] == [(image["id"]["S"], int(image["version"]["N"])) for image in images]


def test_a_mind_that_fails_to_publish_is_reported_and_the_others_are_indexed(
    api: Api, stream: StreamReader, index_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch of three minds, the middle one's publish failing (EFS refusing its write)
    minds = sorted(minds_with_history(api, 3), key=lambda m: m.id)
    records = memory_records(stream.poll())
    broken = minds[1]
    real_publish = Writer.publish

    def failing(self: Writer) -> Path | None:
        if self.mind_id == broken.id:
            raise OSError("EFS said no")
        return real_publish(self)

    monkeypatch.setattr(Writer, "publish", failing)
    # When the indexer applies it
    answer = deliver(records)
    # Then exactly that mind's records are reported (Lambda retries from the first of them) ...
    assert answer == {"batchItemFailures": [{"itemIdentifier": s} for s in sequences(records, broken)]}
    # ... the other minds are indexed, and the broken one published nothing
    for mind in (minds[0], minds[2]):
        assert index_rows(mind.id, index_root) == clean_rebuild_rows(mind.id, tmp_path / mind.id)
    assert index_generations.current_generation(index_root / broken.id) is None
    # And the retry, once EFS writes again, indexes it
    monkeypatch.setattr(Writer, "publish", real_publish)
    assert deliver(records) == {"batchItemFailures": []}
    assert index_rows(broken.id, index_root) == clean_rebuild_rows(broken.id, tmp_path / broken.id)


def test_a_batch_holds_one_writer_lock_per_thread_and_a_bounded_number_of_minds_at_once(
    api: Api, stream: StreamReader, index_root: Path, configure: Configure, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given at most two minds written at once, and a batch of five minds
    configure(SYNAPSE_INDEX_WRITERS="2")
    minds = minds_with_history(api, 5)
    records = memory_records(stream.poll())
    # When the indexer applies it, noting the writer locks held, per thread and in all
    real_lock = index_generations.writer_lock
    guard = threading.Lock()
    held: dict[int, int] = {}
    most = {"thread": 0, "all": 0}

    @contextmanager
    def noting(folder: Path) -> Iterator[None]:
        with real_lock(folder):
            me = threading.get_ident()
            with guard:
                held[me] = held.get(me, 0) + 1
                most["thread"] = max(most["thread"], held[me])
                most["all"] = max(most["all"], sum(held.values()))
            try:
                yield
            finally:
                with guard:
                    held[me] -= 1

    monkeypatch.setattr(index_generations, "writer_lock", noting)
    assert deliver(records) == {"batchItemFailures": []}
    # Then no thread held two minds' locks (no lock cycle is possible), no more than two at once
    assert most["thread"] == 1 and 1 <= most["all"] <= 2
    for mind in minds:
        assert index_rows(mind.id, index_root)


def test_the_pointer_and_the_base_size_read_from_the_header(tmp_path: Path) -> None:
    # Given a mind with a published base and a batch appended to its log
    with Writer("m_header", tmp_path) as writer:
        writer.apply(Change("m_header", "mem_1", 1, None))
        base = writer.publish()
    assert base is not None
    with Writer("m_header", tmp_path) as writer:
        writer.apply(Change("m_header", "mem_2", 1, None))
        assert writer.publish() == base
    # Then CURRENT counts the batch, and the base's header tells its size without a stat
    assert index_generations.pointer_text(tmp_path / "m_header") == f"{base.name} 1"
    header = index_generations.read_header(base)
    assert header is not None and index_generations.header_size(header) == base.stat().st_size
    assert index_generations.read_header(tmp_path / "m_header" / "gen-999999.sqlite") is None
