"""The vectors' layout in a generation (index schema 6): a change writes the pages of its own rows
to the log, not pages scattered through indexes of the table; a generation of schema 5 is read as it
is and moved to the new layout in place by its next batch; a compaction forgets the batches.

The model is the deterministic fake of tests/support/embedding.py (mechanics, not meaning)."""

from __future__ import annotations

import sqlite3
import struct
from collections import Counter
from pathlib import Path

import numpy as np
from synapse.index import generations, readers, schema, vector_rows, vectors, writer
from synapse.index.documents import Change, Doc

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_vector_rows"
NOW = "2026-06-01T00:00:00Z"
VECTOR_TABLES = {"vectors", "vector_batches"}


def doc(n: int, content: str | None = None, version: int = 1) -> Doc:
    text = content or f"fact number {n} about topic {n % 13} and item {n * 7919 % 1000}"
    return Doc(f"mem_{n}", MIND, "fact", f"k_{n}", text, ("home",), "normal", NOW, None, version)


def log_pages_by_tree(generation: Path, since: int) -> Counter[str]:
    """The b-tree (table or index) of each page the log's frames after byte `since` hold."""
    data = generations.log_of(generation).read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    pages = [
        struct.unpack(">I", data[at : at + 4])[0] for at in range(max(since, 32), len(data), 24 + page_size)
    ]
    db = generations.open_read_only(generation)
    try:
        owner = {page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")}
    finally:
        db.close()
    return Counter(owner.get(page, "?") for page in pages)


def whole_matrix(generation: Path) -> dict[str, np.ndarray]:
    db = generations.open_read_only(generation)
    try:
        matrix = vectors.load(db)
    finally:
        db.close()
    assert matrix is not None
    return {memory_id: matrix.vectors[at].copy() for at, memory_id in enumerate(matrix.ids)}


def matrix_rows(base: Path) -> dict[str, np.ndarray]:
    db = readers.reader(MIND, base)
    assert db is not None
    matrix = vectors.matrix_of(db)
    assert matrix is not None
    return {memory_id: matrix.vectors[at].copy() for at, memory_id in enumerate(matrix.ids)}


def test_a_change_writes_one_page_of_vectors_and_one_of_batches(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind of 600 memories (vectors over ~120 pages), compacted into one base
    apply_batch(MIND, [Change.upsert(doc(n)) for n in range(600)], tmp_path)
    apply_batch(MIND, [Change.upsert(doc(600))], tmp_path)
    generation = writer.compact(MIND, tmp_path)
    assert generation is not None
    for change in (
        Change.upsert(doc(601)),  # a new memory
        Change.upsert(doc(17, "the text of memory 17 changed", version=2)),  # a changed one
        Change(MIND, "mem_300", 1, None),  # a removal
    ):
        since = generations.log_bytes(generation)
        # When one change is appended to its log
        assert apply_batch(MIND, [change], tmp_path) == generation
        # Then of the vectors' trees only the change's own page and the batch's are written
        pages = log_pages_by_tree(generation, since)
        assert sum(n for name, n in pages.items() if name in VECTOR_TABLES) <= 2, pages
        assert not [name for name in pages if name.startswith(("vectors_by", "sqlite_autoindex_vectors"))]


def _as_schema_5(generation: Path) -> None:
    """Rewrite a generation's vectors in schema 5's layout: by memory id, indexed by text and batch."""
    db = sqlite3.connect(generation, isolation_level=None)
    generations.configure(db)
    db.execute("ALTER TABLE vectors RENAME TO v6")
    db.execute("DROP TABLE vector_batches")
    db.execute(
        "CREATE TABLE vectors (memory_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
        " text_hash BLOB NOT NULL, vector BLOB NOT NULL, seq INTEGER NOT NULL DEFAULT 0)"
    )
    db.execute("CREATE INDEX vectors_by_text ON vectors (text_hash)")
    db.execute("CREATE INDEX vectors_by_seq ON vectors (seq)")
    db.execute(
        "INSERT INTO vectors SELECT memory_id, version, text_hash, vector, 3 FROM v6 ORDER BY memory_id"
    )
    db.execute("DROP TABLE v6")
    db.execute("INSERT INTO meta (name, value) VALUES ('vectors_seq', '3')")
    db.execute("UPDATE meta SET value = '5' WHERE name = 'schema'")
    db.close()


def test_an_index_of_schema_5_is_read_as_it_is_and_moved_to_the_new_layout_in_place(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind whose published generation keeps its vectors in schema 5's layout
    apply_batch(MIND, [Change.upsert(doc(n)) for n in range(8)], tmp_path)
    generation = generations.current_generation(tmp_path / MIND)
    assert generation is not None
    expected = whole_matrix(generation)
    _as_schema_5(generation)
    # Then a reader takes its matrix from schema 5's rows
    old = matrix_rows(tmp_path)
    assert set(old) == set(expected) and len(old) == 8
    assert all(np.allclose(old[m], expected[m]) for m in expected)
    # When the mind's next batch changes one memory
    changed = doc(3, "the third memory now says something else", version=2)
    assert apply_batch(MIND, [Change.upsert(changed)], tmp_path) == generation
    # Then the generation was moved to schema 6 in place, every vector kept where its docs row is
    db = generations.open_read_only(generation)
    try:
        assert schema.schema_of(db) == "6" and vector_rows.keyed_by_doc(db)
        moved = db.execute(
            "SELECT count(*) FROM vectors v JOIN docs d ON d.rowid = v.rowid AND d.id = v.memory_id"
        ).fetchone()
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()
    assert moved == (8,) and not names & {"vectors_by_text", "vectors_by_seq", "vectors_by_memory"}
    # And the reader that held schema 5's matrix now holds the one a whole read gives
    after = matrix_rows(tmp_path)
    assert set(after) == set(expected)
    assert np.allclose(
        after["mem_3"],
        fake_embedder.embed([vectors.embedded_text("k_3", changed.content, "home")])[0],
        atol=1e-3,
    )
    assert all(np.allclose(after[m], expected[m]) for m in expected if m != "mem_3")


def test_a_compaction_forgets_the_batches_and_its_readers_read_it_whole(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind with batches appended to its base's log, whose matrix a reader holds
    apply_batch(MIND, [Change.upsert(doc(n)) for n in range(5)], tmp_path)
    apply_batch(MIND, [Change.upsert(doc(5))], tmp_path)
    apply_batch(MIND, [Change.upsert(doc(1, "memory one, rewritten", version=2))], tmp_path)
    before = matrix_rows(tmp_path)
    # When the log is compacted into a new base
    compacted = writer.compact(MIND, tmp_path)
    assert compacted is not None
    # Then the new base keeps no batches, and its matrix is the same
    db = generations.open_read_only(compacted)
    try:
        assert vector_rows.last_seq(db) == 0
    finally:
        db.close()
    after = matrix_rows(tmp_path)
    assert set(after) == set(before) and all(np.allclose(after[m], before[m]) for m in before)
    # And its next batch's vector reaches a reader that holds its matrix
    apply_batch(MIND, [Change.upsert(doc(2, "memory two, rewritten", version=2))], tmp_path)
    text = vectors.embedded_text("k_2", "memory two, rewritten", "home")
    assert np.allclose(matrix_rows(tmp_path)["mem_2"], fake_embedder.embed([text])[0], atol=1e-3)
