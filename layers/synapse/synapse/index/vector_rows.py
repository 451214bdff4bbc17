"""Where a generation keeps its vectors (index schema 6), laid out so a batch writes only its own rows.

    vectors(rowid, memory_id, version, text_hash, vector)    one row per memory, at its docs rowid
    vector_batches(seq, rowids)                              one row per batch: the rowids it wrote

Every page a batch changes is a 4 kB frame appended to the generation's log, and each such page is
what EFS bills per change, three times: the log, then the two bases compactions bring up to date
(`index.compaction`; docs/scaling.md, "Search index bytes"). Keyed by the docs rowid, a vector
row lies where its docs row does (a new memory's at the end of the table, a change's in place), and
no index of the table is written: a change costs one page of `vectors` and a batch one page of
`vector_batches`, whatever the mind's size. Schema 5 kept
the rows by memory id, with an index by text and one by batch and the batch counter in `meta`: each
change rewrote five to seven more pages, scattered through those trees.

`vector_batches` is how a reader holding a generation's matrix brings it up to the next generation
of the same base (`matrices.refreshed`); a compaction, which makes a new base that readers load
whole, empties it (`forget_batches`).
"""

import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# Statements run one by one (`executescript` would commit the batch's open transaction).
_TABLES = (
    "CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL,"
    " version INTEGER NOT NULL, text_hash BLOB NOT NULL, vector BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vector_batches (seq INTEGER PRIMARY KEY, rowids BLOB NOT NULL)",
)
# Version-gated: a row is replaced only by the same memory at a version at least its own (or by
# another memory, should a dropped tombstone's rowid ever be taken again).
_PUT_SQL = (
    "INSERT INTO vectors (rowid, memory_id, version, text_hash, vector) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (rowid) DO UPDATE SET memory_id = excluded.memory_id, version = excluded.version,"
    " text_hash = excluded.text_hash, vector = excluded.vector"
    " WHERE excluded.version >= vectors.version OR excluded.memory_id != vectors.memory_id"
)
# Live docs without a vector of their version, with the text to embed.
MISSING_SQL = (
    "SELECT d.id, d.version, d.key, coalesce(f.raw_content, f.content), coalesce(f.raw_tags, f.tags)"
    " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0"
    " AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.rowid = d.rowid AND v.version = d.version)"
    " LIMIT ?"
)
_SEQ_META = "vectors_seq"  # schema 5's batch counter, gone with its layout


class Row(NamedTuple):
    """A vector row to write: the memory at its docs rowid and version, its text's hash, the vector."""

    rowid: int
    memory_id: str
    version: int
    digest: bytes
    vector: bytes


def has_table(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'").fetchone()
    return found is not None


def _columns(db: sqlite3.Connection, table: str) -> dict[str, int]:
    """Column name → its place in the primary key (0: not in it)."""
    return {row[1]: row[5] for row in db.execute(f"PRAGMA table_info({table})")}


def keyed_by_doc(db: sqlite3.Connection) -> bool:
    """Whether the table is schema 6's (by docs rowid); schema 5's is keyed by memory id."""
    return not _columns(db, "vectors").get("memory_id")


def has_batches(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_batches'")
    return found.fetchone() is not None


def create(db: sqlite3.Connection) -> None:
    for statement in _TABLES:
        db.execute(statement)


def key_by_doc(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 5: schema 5's rows moved to their docs rowids, its indexes and
    counter dropped (a generation without vectors gets the tables empty). Idempotent. It writes the
    table once, so the batch that runs it compacts its log into a new base (`writer`)."""
    if has_table(db) and not keyed_by_doc(db):
        seq = (
            db.execute("SELECT max(seq) FROM vectors").fetchone()[0]
            if "seq" in _columns(db, "vectors")
            else None
        )
        db.execute("ALTER TABLE vectors RENAME TO vectors_by_memory")
        db.execute("DROP INDEX IF EXISTS vectors_by_text")
        db.execute("DROP INDEX IF EXISTS vectors_by_seq")
        create(db)
        db.execute(
            "INSERT INTO vectors (rowid, memory_id, version, text_hash, vector)"
            " SELECT d.rowid, v.memory_id, v.version, v.text_hash, v.vector"
            " FROM vectors_by_memory v JOIN docs d ON d.id = v.memory_id"
        )
        db.execute("DROP TABLE vectors_by_memory")
        db.execute("DELETE FROM meta WHERE name = ?", (_SEQ_META,))
        # Past schema 5's last batch, and read whole: a reader's matrix of schema 5 is not brought up.
        db.execute("INSERT INTO vector_batches (seq, rowids) VALUES (?, ?)", (int(seq or 0) + 1, b""))
    elif has_table(db):
        create(db)


def put(db: sqlite3.Connection, rows: Iterable[Row]) -> None:
    db.executemany(_PUT_SQL, rows)


def remove(db: sqlite3.Connection, rowid: int) -> None:
    if has_table(db):
        db.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))


def own_vector(db: sqlite3.Connection, rowid: int) -> tuple[bytes, bytes] | None:
    """(text hash, vector) the memory at `rowid` has now, if any."""
    found = db.execute("SELECT text_hash, vector FROM vectors WHERE rowid = ?", (rowid,)).fetchone()
    return None if found is None else (bytes(found[0]), bytes(found[1]))


def _pack_rowids(rowids: Sequence[int]) -> bytes:
    return b"".join(r.to_bytes(8, "little", signed=True) for r in rowids)


def unpack_rowids(blob: bytes) -> list[int]:
    return [int.from_bytes(blob[at : at + 8], "little", signed=True) for at in range(0, len(blob), 8)]


def last_seq(db: sqlite3.Connection) -> int:
    found = db.execute("SELECT max(seq) FROM vector_batches").fetchone()
    return int(found[0] or 0)


def note_batch(db: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """The batch's vector rows, as one row appended to `vector_batches` (one page)."""
    if rowids:
        db.execute(
            "INSERT INTO vector_batches (seq, rowids) VALUES (?, ?)",
            (last_seq(db) + 1, _pack_rowids(sorted(set(rowids)))),
        )


def note_reset(db: sqlite3.Connection) -> None:
    """Every vector was dropped (another model's): a batch of no rowids tells readers to read whole."""
    db.execute("INSERT INTO vector_batches (seq, rowids) VALUES (?, ?)", (last_seq(db) + 1, b""))


def written_since(db: sqlite3.Connection, seq: int) -> list[int] | None:
    """The rowids the batches after `seq` wrote vectors at; None when one of them dropped every
    vector (`note_reset`): the matrix is then read whole."""
    found: set[int] = set()
    for (blob,) in db.execute("SELECT rowids FROM vector_batches WHERE seq > ?", (seq,)):
        if not blob:
            return None
        found.update(unpack_rowids(blob))
    return sorted(found)


def forget_batches(db: sqlite3.Connection) -> None:
    """A new base is read whole by its readers: the batches of the old one are of no use to them."""
    if has_batches(db):
        db.execute("DELETE FROM vector_batches")


def source_hashes(db: sqlite3.Connection, source: str) -> dict[bytes, int]:
    """text hash → rowid of the vectors of attached database `source` (either layout: both have a
    rowid), for a rebuild to carry over; empty when it has none."""
    if not db.execute(f"SELECT 1 FROM {source}.sqlite_master WHERE name = 'vectors'").fetchone():  # noqa: S608
        return {}
    rows = db.execute(f"SELECT rowid, text_hash FROM {source}.vectors")  # noqa: S608
    return {bytes(digest): at for at, digest in rows}


def source_vector(db: sqlite3.Connection, source: str, rowid: int) -> bytes:
    (vector,) = db.execute(f"SELECT vector FROM {source}.vectors WHERE rowid = ?", (rowid,)).fetchone()  # noqa: S608
    return bytes(vector)
