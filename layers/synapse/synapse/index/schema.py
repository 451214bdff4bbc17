"""One generation's tables, and how a change lands in them: version-gated and idempotent.

The stream delivers at least once and may replay old records: an upsert applies only if its version
is newer than the indexed one, a removal only if it is at least the indexed one, and a removal leaves
a tombstone so a replayed older image cannot bring a deleted memory back (for two days: longer than
the stream keeps any record).
"""

import sqlite3
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.index import vector_rows, vectors
from synapse.index.documents import Change, Doc
from synapse.index.folding import fold

# The index format: a generation of another version is upgraded by the next batch that writes its
# mind (`writer`: in place where `IN_PLACE_UPGRADES` knows how, else rebuilt from the table), while
# searches go on reading it. 2: the porter tokenizer (stemming); 3: the words as written beside the
# stems (`fts_exact`, below); 4: each memory's times (`docs.created_at`, `docs.occurred_at`) for the
# after/before filters (`filters`), `docs.superseded_by` and the days each memory is about (`doc_dates`);
# 5: which of those days it is due on (`doc_dates.due`, recall's "Coming up"); 6: the vectors at their
# docs rowids, without indexes, and the batches' rowids apart (`vector_rows`): a change writes its own
# pages of the log, not six more scattered through the vectors' indexes.
SCHEMA_VERSION = "6"
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
    expires_at TEXT,
    created_at TEXT,
    occurred_at TEXT,
    superseded_by TEXT
);
CREATE TABLE doc_tags (tag TEXT NOT NULL, rowid INTEGER NOT NULL, PRIMARY KEY (tag, rowid)) WITHOUT ROWID;
CREATE INDEX doc_tags_by_doc ON doc_tags (rowid);
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# ---------------------------------------------------------------- the days a memory is about (schema 4)
# Each memory's dates, read when it is indexed (`synapse.when.content`): the day of its occurred_at and
# the dates written in its content ("Dentist on Dec 9", relative to when it was written). A question's
# time window favours the memories with a day in it (`search.in_time`); recall's "Coming up" lists
# those due on a day of the next week (`due`: named on its own, not a day of "this week" or "in
# October"; `when.content`). By day first: a window is a range scan.
DOC_DATES = (
    "CREATE TABLE IF NOT EXISTS doc_dates (day TEXT NOT NULL, rowid INTEGER NOT NULL,"
    " due INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (day, rowid)) WITHOUT ROWID"
)
_DOC_DATES_BY_DOC = "CREATE INDEX IF NOT EXISTS doc_dates_by_doc ON doc_dates (rowid)"


def _days_of(content: str, created_at: str | None, occurred_at: str | None) -> Sequence[tuple[str, bool]]:
    from synapse.when.content import days_about  # the grammar loads with the first memory indexed

    return days_about(content, created_at, occurred_at)


def add_doc_dates(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 3: the table, filled from every live row's content and times. A
    schema-3 row keeps no created_at nor occurred_at: its relative dates count from its last update,
    and its occurred_at day comes with its next change (or a rebuild). Idempotent."""
    db.execute(DOC_DATES)
    db.execute(_DOC_DATES_BY_DOC)
    rows = db.execute(
        "SELECT d.rowid, coalesce(f.raw_content, f.content), coalesce(d.created_at, d.updated_at),"
        " d.occurred_at FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0"
    ).fetchall()
    for rowid, content, written_at, occurred_at in rows:
        _index_days(db, rowid, _days_of(content or "", written_at, occurred_at))


def redo_doc_dates(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 4: the days again, now with which are due."""
    db.execute("DROP TABLE IF EXISTS doc_dates")
    add_doc_dates(db)


# Rows a statement inserts: a memory's days (a dozen for "before Friday … next week") and tags go
# in one statement (or a few), not one each, as every statement lets go of the GIL and then waits to
# get it back (up to 5 ms behind a busy thread: the local runner's requests).
DAYS_PER_INSERT = 200


def _insert_rows(db: sqlite3.Connection, into: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """`into` ("INSERT … INTO table (columns)") with `rows`, DAYS_PER_INSERT a statement."""
    if not rows:
        return
    marks = "(" + ", ".join("?" * len(rows[0])) + ")"
    for start in range(0, len(rows), DAYS_PER_INSERT):
        chunk = rows[start : start + DAYS_PER_INSERT]
        db.execute(f"{into} VALUES " + ", ".join([marks] * len(chunk)), [v for row in chunk for v in row])


def _index_days(db: sqlite3.Connection, rowid: int, days: Sequence[tuple[str, bool]]) -> None:
    rows = [(day, rowid, int(due)) for day, due in days]
    _insert_rows(db, "INSERT OR IGNORE INTO doc_dates (day, rowid, due)", rows)


# Tombstones by age, so dropping the old ones reads only tombstones, not every doc (28 ms a batch at
# 100k memories without it). Created on bases from before it by the first batch that finds none.
_TOMBSTONES_INDEX = "CREATE INDEX IF NOT EXISTS docs_tombstones ON docs (updated_at) WHERE deleted = 1"
# The replaced memories, so a search learns whether there are any without reading every doc.
_REPLACED_INDEX = "CREATE INDEX IF NOT EXISTS docs_replaced ON docs (id) WHERE superseded_by IS NOT NULL"


class _Indexed(NamedTuple):
    """What the generation already holds for a memory id."""

    rowid: int
    version: int
    deleted: int


# ---------------------------------------------------------------- the words as written (schema 3)
# `fts` stems every word (porter), so a prefix or a phrase typed by the user would be stemmed too:
# `deploy*` became `deploi*`, which "deployment" (indexed as `deploy`) does not start with. The same
# folded key, content and tags are indexed a second time, unstemmed, in `fts_exact`; prefix terms and
# phrases query it, best-match words keep querying `fts`. External content (`content='fts'`): it
# stores only its own index, reads the text from `fts` for snippets, and a row is removed from it
# with the text it was added with (`drop_exact_words`, before `fts` loses the row).
EXACT_WORDS_TABLE = "fts_exact"
_EXACT_WORDS = f"""
CREATE VIRTUAL TABLE {EXACT_WORDS_TABLE} USING fts5(
    key, content, tags, content = 'fts', tokenize = 'unicode61 remove_diacritics 2'
)
"""
_ADD_EXACT_WORDS = (
    f"INSERT INTO {EXACT_WORDS_TABLE} (rowid, key, content, tags)"  # noqa: S608 (constants only)
    " SELECT rowid, key, content, tags FROM fts WHERE rowid = ?"
)
_DROP_EXACT_WORDS = (
    f"INSERT INTO {EXACT_WORDS_TABLE} ({EXACT_WORDS_TABLE}, rowid, key, content, tags)"  # noqa: S608
    " SELECT 'delete', rowid, key, content, tags FROM fts WHERE rowid = ?"
)


def create_exact_words(db: sqlite3.Connection) -> None:
    db.execute(_EXACT_WORDS)


def has_exact_words(db: sqlite3.Connection) -> bool:
    """Whether the generation indexes the words as written (an index from before schema 3 does not:
    its prefixes and phrases are searched on the stems until it is upgraded)."""
    found = db.execute(
        "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?", (EXACT_WORDS_TABLE,)
    ).fetchone()
    return found is not None


def add_exact_words(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 2: index every row's text as written. Idempotent."""
    if has_exact_words(db):
        return
    create_exact_words(db)
    db.execute(
        f"INSERT INTO {EXACT_WORDS_TABLE} (rowid, key, content, tags)"  # noqa: S608 (constants only)
        " SELECT rowid, key, content, tags FROM fts"
    )


# ---------------------------------------------------------------- the memories' times (schema 4)
# `after`/`before` select on occurred_at, else created_at, inside the candidate SQL (`filters`). A
# generation of schema 3 gains the columns empty: its rows learn their times as their memories are
# written again (or the index is rebuilt); until then the filter lets them through to `keeps`, which
# decides on the current record.
EVENT_TIME_COLUMNS = ("created_at", "occurred_at")


def has_event_times(db: sqlite3.Connection) -> bool:
    """Whether the generation holds the memories' times (one of schema 3 does not until upgraded)."""
    present = {row[1] for row in db.execute("PRAGMA main.table_info(docs)")}
    return set(EVENT_TIME_COLUMNS) <= present


def add_event_times(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 3: the time columns, empty. Idempotent."""
    if has_event_times(db):
        return
    for column in EVENT_TIME_COLUMNS:
        db.execute(f"ALTER TABLE docs ADD COLUMN {column} TEXT")


# ---------------------------------------------------------------- replaced memories (schema 4)
# `docs.superseded_by`: the id of the memory that replaced this one (`memory.supersede`), so a search
# leaves replaced memories out inside its index query (`SearchFilters.sql`). Nothing was replaced
# before schema 4, so the upgrade adds the column empty: no read of the table.
SUPERSEDED_COLUMN = "superseded_by"


def has_superseded_column(db: sqlite3.Connection) -> bool:
    """Whether the generation knows which memories are replaced (one from before schema 4 does not:
    its searches filter them on the current records only, until it is upgraded)."""
    return any(row[1] == SUPERSEDED_COLUMN for row in db.execute("PRAGMA main.table_info(docs)"))


def add_superseded_column(db: sqlite3.Connection) -> None:
    """The upgrade step from schema 3: the column, empty. Idempotent."""
    if not has_superseded_column(db):
        db.execute(f"ALTER TABLE docs ADD COLUMN {SUPERSEDED_COLUMN} TEXT")


# Upgrades a generation can make to itself, in the batch's own transaction, by the version it is of:
# no read of the table. A version not named here is rebuilt from the table (`rebuild.upgrade_into`).
IN_PLACE_UPGRADES: dict[str, tuple[Callable[[sqlite3.Connection], None], ...]] = {
    "2": (add_exact_words, add_event_times, add_superseded_column, add_doc_dates, vector_rows.key_by_doc),
    "3": (add_event_times, add_superseded_column, add_doc_dates, vector_rows.key_by_doc),
    "4": (redo_doc_dates, vector_rows.key_by_doc),
    "5": (vector_rows.key_by_doc,),
}


def upgrade_in_place(db: sqlite3.Connection) -> bool:
    """Bring a generation of an older version to SCHEMA_VERSION in place, inside the caller's
    transaction; False when its version has no in-place path (it must be rebuilt from the table)."""
    steps = IN_PLACE_UPGRADES.get(schema_of(db) or "")
    if steps is None:
        return False
    for step in steps:
        step(db)
    db.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (SCHEMA_VERSION,))
    return True


# ---------------------------------------------------------------- the generation


def create_schema(db: sqlite3.Connection, mind_id: str) -> None:
    db.executescript(_SCHEMA)
    create_exact_words(db)
    db.execute(DOC_DATES)
    db.execute(_DOC_DATES_BY_DOC)
    db.execute(_TOMBSTONES_INDEX)
    db.execute(_REPLACED_INDEX)
    create_vector_table(db)
    db.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?)",
        [("schema", SCHEMA_VERSION), ("mind_id", mind_id)],
    )


def create_vector_table(db: sqlite3.Connection) -> None:
    """Each memory's embedding beside its rows (`vectors`, `vector_rows`); a generation from before
    vectors gets the tables from the writer's next batch."""
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
    db.execute(_REPLACED_INDEX)
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
    vectors.remove(db, indexed.rowid)
    db.execute(
        "UPDATE docs SET version = ?, deleted = 1, category = NULL, key = NULL, priority = NULL,"
        " priority_rank = NULL, updated_at = ?, expires_at = NULL, created_at = NULL, occurred_at = NULL,"
        " superseded_by = NULL WHERE rowid = ?",
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
        doc.created_at,
        doc.occurred_at,
        doc.superseded_by,
    )
    if indexed is None:
        rowid = db.execute(
            "INSERT INTO docs (version, category, key, priority, priority_rank, updated_at, expires_at,"
            " created_at, occurred_at, superseded_by, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, doc.id),
        ).lastrowid
        assert rowid is not None
    else:
        rowid = indexed.rowid
        _drop_text(db, rowid)
        db.execute(
            "UPDATE docs SET version = ?, category = ?, key = ?, priority = ?, priority_rank = ?,"
            " updated_at = ?, expires_at = ?, created_at = ?, occurred_at = ?, superseded_by = ?, deleted = 0"
            " WHERE rowid = ?",
            (*fields, rowid),
        )
    _index_text(db, rowid, doc)
    _replace_rows(db, "doc_tags", "tag", rowid, {(tag,) for tag in doc.tags}, indexed is None)
    days = _days_of(doc.content, doc.created_at or doc.updated_at, doc.occurred_at)
    _replace_rows(db, "doc_dates", "day, due", rowid, {(day, int(due)) for day, due in days}, indexed is None)
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
    db.execute(_ADD_EXACT_WORDS, (rowid,))


def _replace_rows(
    db: sqlite3.Connection, table: str, columns: str, rowid: int, rows: set[tuple[Any, ...]], new: bool
) -> None:
    """A memory's rows of `table` (doc_tags, doc_dates) made `rows`, touching only those that change
    (`new`: it has none yet): an update that keeps its tags and days writes no page of either
    table (each page a change writes reaches EFS three times: the log, then the two bases a
    compaction brings up to date, `index.compaction`)."""
    held = set() if new else set(db.execute(f"SELECT {columns} FROM {table} WHERE rowid = ?", (rowid,)))  # noqa: S608
    gone, added = held - rows, rows - held
    if gone:
        first = columns.split(",")[0]
        marks = ", ".join("?" * len(gone))
        db.execute(
            f"DELETE FROM {table} WHERE rowid = ? AND {first} IN ({marks})",  # noqa: S608 (constants only)
            [rowid, *(row[0] for row in gone)],
        )
    _insert_rows(
        db, f"INSERT OR REPLACE INTO {table} ({columns}, rowid)", [(*row, rowid) for row in sorted(added)]
    )


def _drop_text(db: sqlite3.Connection, rowid: int) -> None:
    db.execute(_DROP_EXACT_WORDS, (rowid,))  # first: it removes the text `fts` still holds
    db.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))


def _drop_indexed(db: sqlite3.Connection, rowid: int) -> None:
    _drop_text(db, rowid)
    db.execute("DELETE FROM doc_tags WHERE rowid = ?", (rowid,))
    db.execute("DELETE FROM doc_dates WHERE rowid = ?", (rowid,))
