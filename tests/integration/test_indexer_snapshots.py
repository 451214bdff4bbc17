"""Snapshot generations on a folder standing in for EFS: published files never change, readers keep a
consistent generation while the next is published, old ones go after the grace period, a failed
build leaves nothing behind, and a rebuild merges with what was indexed while it read the table."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from synapse.core import clock
from synapse.index import folding, generations, readers
from synapse.index.documents import Change, Doc
from synapse.index.rebuild import rebuild
from synapse.index.writer import Writer

from tests.support.indexing import apply_batch, live_rows

MIND = "m_snapshotTest0000000000"


def doc(memory_id: str, content: str, version: int = 1, updated_at: str = "2026-11-30T08:00:00.000Z") -> Doc:
    return Doc(
        id=memory_id,
        mind_id=MIND,
        category="fact",
        key=memory_id.removeprefix("mem_"),
        content=content,
        tags=("t",),
        priority="normal",
        updated_at=updated_at,
        expires_at=None,
        version=version,
    )


def matching(db: sqlite3.Connection, word: str) -> list[str]:
    rows = db.execute(
        "SELECT d.id FROM fts JOIN docs d ON d.rowid = fts.rowid WHERE fts MATCH ? ORDER BY d.id", (word,)
    )
    return [r[0] for r in rows]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_reader_keeps_its_generation_while_the_next_is_published(tmp_path: Path) -> None:
    # Given a published generation and a reader that opened it
    apply_batch(MIND, [Change.upsert(doc("mem_a", "alpha")), Change.upsert(doc("mem_b", "alpha"))], tmp_path)
    held = readers.reader(MIND, tmp_path)
    assert held is not None
    before = matching(held, "alpha")
    first = generations.current_generation(tmp_path / MIND)
    assert first is not None
    first_digest = digest(first)
    # When the next generation deletes one and adds another
    apply_batch(MIND, [Change(MIND, "mem_a", 1, None), Change.upsert(doc("mem_c", "alpha"))], tmp_path)
    # Then the held connection still answers from its generation, consistently
    assert matching(held, "alpha") == before == ["mem_a", "mem_b"]
    # And the published file was not modified
    assert digest(first) == first_digest
    # And a reader asking now gets the new generation
    fresh = readers.reader(MIND, tmp_path)
    assert fresh is not None and fresh is not held
    assert matching(fresh, "alpha") == ["mem_b", "mem_c"]
    # While CURRENT is unchanged the same connection is reused
    assert readers.reader(MIND, tmp_path) is fresh


def test_superseded_generations_go_after_the_grace_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a base whose log a second batch outgrows (every log does, here), so a new base replaces it
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 0)
    monkeypatch.setattr(generations, "COMPACT_SCALE_BYTES", 0)
    folder = tmp_path / MIND
    apply_batch(MIND, [Change.upsert(doc("mem_a", "one"))], tmp_path)
    apply_batch(MIND, [Change.upsert(doc("mem_a", "two", version=2))], tmp_path)
    first, second = folder / "gen-000001.sqlite", folder / "gen-000002.sqlite"
    first_log = generations.log_of(first)
    retired_at = first.stat().st_mtime
    # Within the grace period the retired generation stays readable, with its log
    generations.collect_garbage(folder, now=retired_at + generations.GRACE_SECONDS - 1)
    assert first.exists() and first_log.exists() and second.exists()
    # After it, it is removed with its log; the current one never is
    generations.collect_garbage(folder, now=retired_at + generations.GRACE_SECONDS + 1)
    assert not first.exists() and not first_log.exists() and second.exists()
    generations.collect_garbage(folder, now=retired_at + 10 * generations.GRACE_SECONDS)
    assert second.exists()


def test_a_failed_build_leaves_the_published_generation_and_no_temp_file(tmp_path: Path) -> None:
    apply_batch(MIND, [Change.upsert(doc("mem_a", "one"))], tmp_path)
    with pytest.raises(RuntimeError), Writer(MIND, tmp_path) as writer:
        writer.apply(Change.upsert(doc("mem_b", "two")))
        raise RuntimeError("the invocation died")
    folder = tmp_path / MIND
    assert sorted(p.name for p in folder.glob("*.sqlite")) == ["gen-000001.sqlite"]
    db = readers.reader(MIND, tmp_path)
    assert db is not None and matching(db, "two") == []


def test_a_batch_that_changes_nothing_publishes_nothing(tmp_path: Path) -> None:
    change = Change.upsert(doc("mem_a", "one", version=3))
    apply_batch(MIND, [change], tmp_path)
    assert apply_batch(MIND, [change, Change.upsert(doc("mem_a", "old", version=2))], tmp_path) is None
    assert generations.current_generation(tmp_path / MIND) == tmp_path / MIND / "gen-000001.sqlite"


def test_a_tombstone_stops_an_older_image_from_resurrecting_a_memory(tmp_path: Path) -> None:
    apply_batch(MIND, [Change(MIND, "mem_a", 2, None)], tmp_path)
    apply_batch(MIND, [Change.upsert(doc("mem_a", "zombie", version=2))], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None and matching(db, "zombie") == []


def tombstones(mind: str, base: Path) -> list[str]:
    db = readers.reader(mind, base)
    assert db is not None
    return [row[0] for row in db.execute("SELECT id FROM docs WHERE deleted = 1 ORDER BY id")]


def test_tombstones_go_once_the_stream_can_no_longer_replay_what_they_guard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moment = [datetime(2026, 11, 30, 8, 0, tzinfo=UTC)]
    monkeypatch.setattr(clock, "now", lambda: moment[0])
    # Given a deleted memory's tombstone
    apply_batch(MIND, [Change.upsert(doc("mem_a", "one")), Change(MIND, "mem_a", 1, None)], tmp_path)
    # When another change is published a day later, it still stands (the stream keeps records 24 h)
    moment[0] += timedelta(days=1)
    apply_batch(MIND, [Change.upsert(doc("mem_b", "two"))], tmp_path)
    assert tombstones(MIND, tmp_path) == ["mem_a"]
    # When a change is published once no stream record of the deleted memory can be left
    moment[0] += timedelta(days=2)
    apply_batch(MIND, [Change.upsert(doc("mem_c", "three"))], tmp_path)
    # Then the tombstone is gone: deleted memories do not grow the index (and every copy of it) forever
    assert tombstones(MIND, tmp_path) == []
    db = readers.reader(MIND, tmp_path)
    assert db is not None and [row.id for row in live_rows(db)] == ["mem_b", "mem_c"]


def open_files_under(folder: Path) -> int:
    """Files this process holds open below `folder` (Linux: /proc/self/fd)."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if str(fd.resolve(strict=False)).startswith(str(folder)))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux, as Lambda)")
def test_a_warm_reader_holds_a_bounded_number_of_indexes_open(tmp_path: Path) -> None:
    # Given many minds with an index each (one search container serves every mind)
    minds = [f"m_bounded{i:04d}" for i in range(300)]
    for mind in minds:
        change = Change.upsert(Doc(**{**doc("mem_a", "alpha")._asdict(), "mind_id": mind}))
        apply_batch(mind, [change], tmp_path)
    # When each is searched in turn by the same process
    for mind in minds:
        db = readers.reader(mind, tmp_path)
        assert db is not None and matching(db, "alpha") == ["mem_a"]
    # Then it keeps only a bounded number of index files open (file descriptors and page caches
    # would otherwise grow with every mind searched until the container fails)
    assert open_files_under(tmp_path) <= 2 * readers.MAX_OPEN_READERS  # a base and its log each
    # And a mind whose connection was let go is opened again on its next search
    again = readers.reader(minds[0], tmp_path)
    assert again is not None and matching(again, "alpha") == ["mem_a"]


def test_a_rebuild_keeps_what_was_indexed_while_it_read_the_table(tmp_path: Path) -> None:
    # Given the published index already has v2 of mem_a, a tombstone for mem_t, and mem_x which the
    # table no longer holds (a drift: its delete was lost long ago)
    apply_batch(
        MIND,
        [
            Change.upsert(doc("mem_a", "newer text", version=2, updated_at="2099-01-01T00:00:00.000Z")),
            Change(MIND, "mem_t", 1, None),
            Change.upsert(doc("mem_x", "drifted", updated_at="2020-01-01T00:00:00.000Z")),
        ],
        tmp_path,
    )
    # When a rebuild reads a table snapshot that still has v1 of mem_a and v1 of mem_t
    table = [
        {**doc("mem_a", "older text")._asdict(), "tags": ["t"]},
        {**doc("mem_t", "deleted meanwhile")._asdict(), "tags": ["t"]},
        {**doc("mem_b", "only in the table")._asdict(), "tags": ["t"]},
    ]
    rebuilt = rebuild(MIND, items=table, base=tmp_path)
    # Then the newer change and the tombstone win, the drifted doc is gone, the table's doc is in
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    assert [row.id for row in live_rows(db)] == ["mem_a", "mem_b"]
    assert matching(db, "newer") == ["mem_a"] and matching(db, "deleted") == []
    assert matching(db, "drifted") == [] and rebuilt.carried_over == 2


def test_fold_keeps_length_and_strips_diacritics_in_every_script() -> None:
    for original, folded in [("Schäfer", "Schafer"), ("Ёлка", "Елка"), ("Ἀθῆναι", "Αθηναι"), ("ﬁ", "ﬁ")]:
        assert folding.fold(original) == folded
        assert len(folding.fold(original)) == len(original)


def test_a_snippet_of_folded_text_maps_back_onto_the_original() -> None:
    original = "Михаил Шефер любит ёлки"
    snippet = f"Михаил Шефер любит {folding.MARK_OPEN}елки{folding.MARK_CLOSE}"
    columns = [(None, None), (folding.fold(original), original), (None, None)]
    restored = folding.restore_snippet(snippet, columns, ("[", "]"))
    assert restored == "Михаил Шефер любит [ёлки]"
