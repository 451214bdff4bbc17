"""One generation's tables, and how a change lands in them: version-gated and idempotent.

The stream delivers at least once and may replay old records: an upsert applies only if its version
is newer than the indexed one, a removal only if it is at least the indexed one, and a removal leaves
a tombstone so a replayed older image cannot bring a deleted memory back (for two days: longer than
the stream keeps any record).
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import NamedTuple

from synapse.core import clock
from synapse.search import vectors
from synapse.search.documents import Change, Doc
from synapse.search.folding import fold

# The index format: a generation of another version is rebuilt from the table by the next batch that
# writes its mind (`writer`), while searches go on reading it. 2: the porter tokenizer (stemming).
SCHEMA_VERSION = "2"
# A tombstone (a removed memory's row, `updated_at` = when it was applied) guards against replays of
# the memory's older records; the stream keeps a record 24 hours and a memory id never returns, so
# after two days there is nothing left to guard against and it is dropped at the next publish.
TOMBSTONE_SECONDS = 2 * 86400.0
# Key, content, tags: key and tags weigh more than content (SPEC §5). FTS5's bm25() is lower-is-better.
BM25_WEIGHTS = (3.0, 1.0, 2.0)

_SCHEMA = """
CREATE VIRTUAL TABLE fts USING fts5(
    key, content, tags, raw_key UNINDEXED, raw_content UNINDEXED, raw_tags UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE docs (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    category TEXT,
    key TEXT,
    priority TEXT,
    priority_rank INTEGER,
    updated_at TEXT,
    expires_at TEXT
);
CREATE TABLE doc_tags (tag TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY (tag, rowid)) WITHOUT ROWID;
CREATE INDEX doc_tags_by_doc ON doc_tags (rowid);
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# Tombstones by age, so dropping the old ones reads only tombstones, not every doc (28 ms a batch at
# 100k memories without it). Created on bases from before it by the first batch that finds none.
_TOMBSTONES_INDEX = "CREATE INDEX IF NOT EXISTS docs_tombstones ON docs (updated_at) WHERE deleted = 1"


class _Indexed(NamedTuple):
    """What the generation already holds for a memory id."""

    rowid: int
    version: int
    deleted: int


def create_schema(db: sqlite3.Connection, mind_id: str) -> None:
    db.executescript(_SCHEMA)
    db.execute(_TOMBSTONES_INDEX)
    create_vector_table(db)
    db.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?)",
        [("schema", SCHEMA_VERSION), ("mind_id", mind_id)],
    )


def create_vector_table(db: sqlite3.Connection) -> None:
    """Each memory's embedding beside its rows (`vectors`); a generation from before it gets the
    table from the writer's next batch, so vectors need no new index format."""
    vectors.create_table(db)


def schema_of(db: sqlite3.Connection) -> str | None:
    found = db.execute("SELECT value FROM main.meta WHERE name = 'schema'").fetchone()
    return None if found is None else str(found[0])


def mind_id_of(db: sqlite3.Connection) -> str:
    (mind_id,) = db.execute("SELECT value FROM main.meta WHERE name = 'mind_id'").fetchone()
    return str(mind_id)


def drop_old_tombstones(db: sqlite3.Connection) -> int:
    """Remove tombstones older than TOMBSTONE_SECONDS (no stream record can contradict them)."""
    cutoff = clock.to_iso(clock.now() - timedelta(seconds=TOMBSTONE_SECONDS))
    db.execute(_TOMBSTONES_INDEX)
    found = db.execute(
        "DELETE FROM docs WHERE deleted = 1 AND (updated_at IS NULL OR updated_at < ?)", (cutoff,)
    )
    return found.rowcount


def apply_change(db: sqlite3.Connection, change: Change) -> bool:
    """Apply one change if its version allows; True when the index changed. Idempotent."""
    row = db.execute("SELECT rowid, version, deleted FROM docs WHERE id = ?", (change.memory_id,)).fetchone()
    indexed = None if row is None else _Indexed(*row)
    if change.doc is None:
        return _remove(db, change, indexed)
    return _upsert(db, change.doc, indexed)


def _remove(db: sqlite3.Connection, change: Change, indexed: _Indexed | None) -> bool:
    if indexed is not None and (
        indexed.version > change.version or (indexed.deleted and indexed.version == change.version)
    ):
        return False
    removed_at = clock.to_iso(clock.now())
    if indexed is None:
        db.execute(
            "INSERT INTO docs (id, version, deleted, updated_at) VALUES (?, ?, 1, ?)",
            (change.memory_id, change.version, removed_at),
        )
        return True
    _drop_indexed(db, indexed.rowid)
    vectors.remove(db, change.memory_id)
    db.execute(
        "UPDATE docs SET version = ?, deleted = 1, category = NULL, key = NULL, priority = NULL,"
        " priority_rank = NULL, updated_at = ?, expires_at = NULL WHERE rowid = ?",
        (change.version, removed_at, indexed.rowid),
    )
    return True


def _upsert(db: sqlite3.Connection, doc: Doc, indexed: _Indexed | None) -> bool:
    if indexed is not None and indexed.version >= doc.version:
        return False
    fields = (
        doc.version,
        doc.category,
        doc.key,
        doc.priority,
        doc.priority_rank,
        doc.updated_at,
        doc.expires_at,
    )
    if indexed is None:
        rowid = db.execute(
            "INSERT INTO docs (version, category, key, priority, priority_rank, updated_at, expires_at, id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, doc.id),
        ).lastrowid
        assert rowid is not None
    else:
        rowid = indexed.rowid
        _drop_indexed(db, rowid)
        db.execute(
            "UPDATE docs SET version = ?, category = ?, key = ?, priority = ?, priority_rank = ?,"
            " updated_at = ?, expires_at = ?, deleted = 0 WHERE rowid = ?",
            (*fields, rowid),
        )
    _index_text(db, rowid, doc)
    return True


def _index_text(db: sqlite3.Connection, rowid: int, doc: Doc) -> None:
    """Folded text for FTS5 to match; the original kept beside it only where folding changed it."""
    texts = (doc.key, doc.content, ", ".join(doc.tags))
    folded = tuple(fold(t) for t in texts)
    originals = tuple(None if f == t else t for f, t in zip(folded, texts, strict=True))
    db.execute(
        "INSERT INTO fts (rowid, key, content, tags, raw_key, raw_content, raw_tags)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (rowid, *folded, *originals),
    )
    db.executemany(
        "INSERT OR IGNORE INTO doc_tags (tag, rowid) VALUES (?, ?)", [(t, rowid) for t in doc.tags]
    )


def _drop_indexed(db: sqlite3.Connection, rowid: int) -> None:
    db.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
    db.execute("DELETE FROM doc_tags WHERE rowid = ?", (rowid,))
