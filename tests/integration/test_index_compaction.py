"""Compaction without copying the base: the retired base is brought up to date in place of a copy,
and what it publishes is byte for byte what SQLite's own checkpoint of a copy gives."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from synapse.index import compaction, generations, vector_rows, wal
from synapse.index.documents import Change, Doc
from synapse.index.writer import Writer, compact

from tests.support.indexing import apply_batch, copy_of

MIND = "m_compactTest00000000000"
WORDS = ["alpha", "beta", "gamma", "delta", "schäfer", "ёлка", "omega", "sigma", "tau", "rho"]


def doc(n: int, salt: int = 0) -> Doc:
    words = " ".join(WORDS[(n * 7 + i * 3 + salt) % len(WORDS)] for i in range(2 + (n + salt) % 9))
    return Doc(
        id=f"mem_{n:04d}",
        mind_id=MIND,
        category="fact",
        key=f"key_{n}",
        content=f"{words} number {n} round {salt}",
        tags=("t", f"r{salt % 3}"),
        priority="normal",
        updated_at="2026-11-30T08:00:00.000Z",
        expires_at=None,
        version=1 + salt,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checkpointed_by_sqlite(generation: Path, into: Path) -> str:
    """What compaction wrote before it reused bases: a copy of base and log, checkpointed by SQLite,
    then tidied; its digest."""
    shutil.copyfile(generation, into)
    shutil.copyfile(generations.log_of(generation), generations.log_of(into))
    db = sqlite3.connect(into, isolation_level=None)
    db.execute("PRAGMA locking_mode = EXCLUSIVE")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    vector_rows.forget_batches(db)
    db.close()
    generations.log_of(into).unlink(missing_ok=True)
    return digest(into)


@pytest.fixture(scope="session")
def built_mind(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index-compaction-mind")
    apply_batch(MIND, [Change.upsert(doc(n)) for n in range(120)], root)
    return root


@pytest.fixture(name="folder")
def folder_fixture(built_mind: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A mind of 120 memories (built once, a copy for each test), compacted after every batch, whose
    retired bases pass their grace period as soon as they are retired, and are reused whatever their
    size."""
    copy_of(built_mind, tmp_path)
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 0)
    monkeypatch.setattr(generations, "COMPACT_SCALE_BYTES", 0)
    monkeypatch.setattr(generations, "GRACE_SECONDS", -1.0)
    monkeypatch.setattr(generations, "REUSE_MIN_BYTES", 0)
    return tmp_path / MIND


def compact_batch(folder: Path, changes: list[Change], reference: Path) -> tuple[Path, str]:
    """Publish one batch into the log, then compact it; returns the new base and the digest of
    SQLite's checkpoint of a copy of the same base and log."""
    appended = apply_batch(MIND, changes, folder.parent)
    assert appended is not None
    expected = checkpointed_by_sqlite(appended, reference)
    published = compact(MIND, folder.parent)
    assert published is not None
    return published, expected


def test_a_compaction_reuses_the_retired_base_and_publishes_what_a_copy_would(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "due", lambda *_, **__: False)  # compacted by hand below
    reference = tmp_path / "reference.sqlite"
    reused = 0
    for round_ in range(1, 7):
        # Given the retired base of the last compaction, if any, and the pages it differs in
        before = {p.name for p in folder.iterdir()}
        # When a batch of updates, new memories and a removal is published, then compacted
        changes = [Change.upsert(doc(n, round_)) for n in range(round_ * 5, round_ * 5 + 20)]
        changes.append(Change(MIND, f"mem_{round_:04d}", 99, None))
        published, expected = compact_batch(folder, changes, reference)
        # Then the new base is byte for byte SQLite's checkpoint of base and log (tidied)
        assert digest(published) == expected
        db = sqlite3.connect(published)
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.close()
        # And it lists the pages it differs in from the base it replaced
        assert generations.changes_of(published).exists()
        reused += len(before - {p.name for p in folder.iterdir()} - {"CURRENT"}) > 0
    # And from the second compaction on, the retired base was taken, not copied
    assert reused >= 4


def test_a_torn_tail_of_the_log_is_not_written_into_the_new_base(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "due", lambda *_, **__: False)
    # Given a published batch, and a writer that died mid-batch after spilling pages into the log
    apply_batch(MIND, [Change.upsert(doc(n, 1)) for n in range(10)], folder.parent)
    with pytest.raises(RuntimeError), Writer(MIND, folder.parent) as writer:
        for n in range(300):
            writer.apply(Change.upsert(doc(n, 7)))
        raise RuntimeError("the invocation died")
    current = generations.current_generation(folder)
    assert current is not None
    expected = checkpointed_by_sqlite(current, tmp_path / "reference.sqlite")
    # When the log is compacted
    published = compact(MIND, folder.parent)
    # Then the dead batch's pages are not in it: the same bytes as SQLite's checkpoint
    assert published is not None and digest(published) == expected


def test_a_compaction_waits_for_the_retired_base_to_leave_its_grace_period(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generations, "GRACE_SECONDS", 300.0)
    # Given a base just published by a compaction (its predecessor retired now)
    published = apply_batch(MIND, [Change.upsert(doc(1, 1))], folder.parent)
    assert published is not None and generations.changes_of(published).exists()
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 1)  # a threshold of 1 byte
    monkeypatch.setattr(compaction, "WAIT_FACTOR", 1e12)
    # When a batch's log passes the threshold within the grace period
    with Writer(MIND, folder.parent) as writer:
        writer.apply(Change.upsert(doc(2, 1)))
        writer.publish()
    # Then the compaction waits (the log grows), and is due once the retired base is past its grace
    assert generations.log_bytes(published) > 0
    assert not compaction.due(published)
    assert compaction.due(published, now=time.time() + 301)
    # And a log past WAIT_FACTOR times its threshold does not wait
    monkeypatch.setattr(compaction, "WAIT_FACTOR", 0.0)
    assert compaction.due(published)


def test_the_newest_retired_base_is_kept_past_the_grace_period_when_worth_reusing(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(generations, "GRACE_SECONDS", 300.0)
    # Given three compactions: gen 2, 3 and 4, with 2 and 3 retired
    for salt in (1, 2, 3):
        apply_batch(MIND, [Change.upsert(doc(salt, salt))], folder.parent)
    names = sorted(p.name for p in folder.iterdir() if generations.is_generation_name(p.name))
    assert names[-3:] == ["gen-000002.sqlite", "gen-000003.sqlite", "gen-000004.sqlite"]
    later = time.time() + 10 * 300
    # When garbage is collected long after
    generations.collect_garbage(folder, now=later)
    left = sorted(p.name for p in folder.iterdir())
    # Then the current base and the newest retired one stay, with their logs and change lists
    assert [n for n in left if n.startswith("gen-")] == [
        "gen-000003.sqlite",
        "gen-000003.sqlite-changes",
        "gen-000003.sqlite-wal",
        "gen-000004.sqlite",
        "gen-000004.sqlite-changes",
        "gen-000004.sqlite-wal",
    ]
    # And a retired base too small to be worth reusing goes like any other
    monkeypatch.setattr(generations, "REUSE_MIN_BYTES", 1 << 40)
    generations.collect_garbage(folder, now=later)
    assert not (folder / "gen-000003.sqlite").exists()
    assert not generations.changes_of(folder / "gen-000003.sqlite").exists()


def test_a_change_list_naming_a_base_that_is_gone_means_a_copy(folder: Path) -> None:
    # Given a base whose change list names a retired base no longer on disk
    published = apply_batch(MIND, [Change.upsert(doc(1, 1))], folder.parent)
    assert published is not None
    retired = folder / "gen-000001.sqlite"
    os.remove(retired)
    # When it is compacted
    apply_batch(MIND, [Change.upsert(doc(2, 2))], folder.parent)
    # Then the base was copied (a new generation, readable)
    current = generations.current_generation(folder)
    assert current is not None and current.name == "gen-000003.sqlite"
    db = sqlite3.connect(current)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()


def test_an_update_that_keeps_its_tags_writes_no_page_of_the_tag_table(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "due", lambda *_, **__: False)
    current = generations.current_generation(folder)
    assert current is not None
    db = sqlite3.connect(current)
    owners = {page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")}
    db.close()
    # When a memory's text changes but not its tags
    kept = doc(7)._replace(content="a new text for memory seven", version=5)
    apply_batch(MIND, [Change.upsert(kept)], folder.parent)
    log = wal.read_log(generations.log_of(current))
    # Then no page of doc_tags (or its index) is in the log
    assert log is not None
    written = {owners.get(page, "new") for page in log.pages}
    assert "fts" in written or "fts_content" in written
    assert not written & {"doc_tags", "doc_tags_by_doc"}
    # And when a tag changes, the memory is found by its new tag and not its old one
    moved = kept._replace(tags=("t", "moved"), version=6)
    apply_batch(MIND, [Change.upsert(moved)], folder.parent)
    reader = generations.open_read_only(current)
    tags = {
        tag
        for (tag,) in reader.execute("SELECT tag FROM doc_tags JOIN docs USING (rowid) WHERE id = 'mem_0007'")
    }
    reader.close()
    assert tags == {"t", "moved"}
