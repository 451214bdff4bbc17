"""Rebuilding a mind's index from the table, merged with whatever the indexer published meanwhile."""

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

from synapse import embedding
from synapse.core import clock
from synapse.index import deferred, generations, schema, vectors
from synapse.index.documents import Change, Doc
from synapse.storage import tables

# A memory of a rebuild's source may have changed while the rebuild read the table; anything the
# current generation holds that was updated this close to the rebuild's start is carried over.
REBUILD_OVERLAP_SECONDS = 30.0

_CARRIED_SQL = (
    "SELECT o.id, o.version, o.deleted, o.category, o.key, o.priority, o.updated_at, o.expires_at,"
    " coalesce(f.raw_content, f.content),"
    " (SELECT group_concat(t.tag, char(31)) FROM old.doc_tags t WHERE t.rowid = o.rowid), {times}"
    " FROM old.docs o LEFT JOIN old.fts f ON f.rowid = o.rowid"
    " LEFT JOIN main.docs n ON n.id = o.id"
    " WHERE (n.id IS NULL AND (o.deleted = 1 OR o.updated_at >= ?))"
    " OR (o.deleted = 1 AND o.version >= n.version) OR o.version > n.version"
)


class _Carried(NamedTuple):
    """A row of the current generation that wins over the rebuilt one.

    A tombstone (`deleted`) has no category, key, priority or text: only a live doc's are read.
    """

    id: str
    version: int
    deleted: int
    category: str
    key: str
    priority: str
    updated_at: str
    expires_at: str | None
    content: str | None  # the original text
    tags: str | None  # joined by \x1f
    created_at: str | None  # None from a generation older than schema 4
    occurred_at: str | None

    def change(self, mind_id: str) -> Change:
        if self.deleted:
            return Change(mind_id, self.id, self.version, None)
        doc = Doc(
            id=self.id,
            mind_id=mind_id,
            category=self.category,
            key=self.key,
            content=self.content or "",
            tags=tuple(self.tags.split("\x1f")) if self.tags else (),
            priority=self.priority,
            updated_at=self.updated_at,
            expires_at=self.expires_at,
            version=self.version,
            created_at=self.created_at,
            occurred_at=self.occurred_at,
        )
        return Change.upsert(doc)


class Rebuilt(NamedTuple):
    mind_id: str
    indexed: int
    carried_over: int
    generation: Path | None
    vectors_reused: int = 0
    vectors_embedded: int = 0


# What a rebuild embeds itself; the rest (a large mind's first embedding) is left to the indexer's
# next batches (`vectors.fill`) and to the next rebuild, which reuses everything embedded by then.
REBUILD_EMBED_BUDGET = 20_000


def _vectors_into(
    db: sqlite3.Connection, current: Path | None, budget: int, base: Path | None = None
) -> tuple[int, int]:
    """A new base's vectors: those of the current generation whose text is unchanged (by
    text_hash), then up to `budget` embedded. Outside a transaction (ATTACH cannot be in one)."""
    model = vectors.embedder()
    if model is None:
        return 0, 0
    reused = 0
    db.execute("BEGIN")
    vectors.prepare(db, model)
    db.execute("COMMIT")
    if current is not None and current.exists():
        generations.configure(db)
        db.execute("ATTACH DATABASE ? AS old", (generations.read_only_uri(current),))
        try:
            db.execute("BEGIN")
            same_model = db.execute(
                "SELECT 1 FROM old.meta WHERE name = 'vectors_model' AND value = ?",
                (vectors.model_name(model),),
            ).fetchone()
            reused = vectors.carry(db, "old") if same_model else 0
            db.execute("COMMIT")
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")
            db.execute("DETACH DATABASE old")
    embedded = 0
    db.execute("BEGIN")
    try:
        while embedded < budget:
            step = vectors.fill(db, model, min(vectors.FILL_PER_BATCH, budget - embedded))
            embedded += step
            if not step:
                break
    except embedding.EmbeddingError as error:  # the rows are rebuilt all the same; vectors come later
        db.execute("ROLLBACK")
        db.execute("BEGIN")
        vectors.mark_incomplete(db)
        mind_id = schema.mind_id_of(db)
        deferred.note(mind_id, base)
        vectors.model_failed(vectors.INDEX_VECTORS_DEFERRED, error, mind_id=mind_id)
        embedded = 0
    db.execute("COMMIT")
    return reused, embedded


def _memory_items(mind_id: str) -> Iterator[dict[str, Any]]:
    yield from tables.query_all(
        TableName=tables.memories_table(),
        KeyConditionExpression="pk = :mind AND begins_with(sk, :prefix)",
        ExpressionAttributeValues=tables.values(mind=mind_id, prefix=tables.MEMORY_PREFIX),
    )


def _carried_rows(db: sqlite3.Connection, started_iso: str) -> list[_Carried]:
    old_columns = {row[1] for row in db.execute("PRAGMA old.table_info(docs)")}
    has_times = set(schema.EVENT_TIME_COLUMNS) <= old_columns
    times = "o.created_at, o.occurred_at" if has_times else "NULL, NULL"  # an older generation's rows
    return list(map(_Carried._make, db.execute(_CARRIED_SQL.format(times=times), (started_iso,))))


def _carry(db: sqlite3.Connection, mind_id: str, row: _Carried) -> bool:
    applied = schema.apply_change(db, row.change(mind_id))
    if row.deleted and row.updated_at:  # a tombstone keeps its age
        db.execute("UPDATE docs SET updated_at = ? WHERE id = ?", (row.updated_at, row.id))
    return applied


def _carry_over(db: sqlite3.Connection, current: Path, started_iso: str) -> int:
    """Bring in what the current generation knows that the table read may have missed.

    Per id the higher version wins (a change indexed while the rebuild was reading); tombstones
    carry over (so old replays stay harmless); a live doc the table no longer holds is dropped
    unless it was updated after the rebuild started (then the table read may simply have passed it).
    Called outside a transaction (SQLite cannot ATTACH inside one).
    """
    mind_id = schema.mind_id_of(db)
    generations.configure(db)  # the current generation is read with its log, and left unchanged
    db.execute("ATTACH DATABASE ? AS old", (generations.read_only_uri(current),))
    try:
        db.execute("BEGIN")
        carried = sum(_carry(db, mind_id, row) for row in _carried_rows(db, started_iso))
        schema.drop_old_tombstones(db)
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.execute("DETACH DATABASE old")
    return carried


def _index_all(db: sqlite3.Connection, mind_id: str, items: Iterable[dict[str, Any]]) -> int:
    schema.create_schema(db, mind_id)
    db.execute("BEGIN")
    indexed = sum(schema.apply_change(db, Change.upsert(Doc.from_item(item))) for item in items)
    db.execute("COMMIT")
    db.execute("INSERT INTO fts (fts) VALUES ('optimize')")
    db.execute(f"INSERT INTO {schema.EXACT_WORDS_TABLE} ({schema.EXACT_WORDS_TABLE}) VALUES ('optimize')")  # noqa: S608
    return indexed


def upgrade_into(db: sqlite3.Connection, mind_id: str, current: Path) -> int:
    """Index the mind from the table into `db`, a new base, merged with what `current` (an index of
    another format) knows newer. The caller holds the writer lock, so nothing publishes meanwhile."""
    started = clock.to_iso(clock.now() - timedelta(seconds=REBUILD_OVERLAP_SECONDS))
    indexed = _index_all(db, mind_id, _memory_items(mind_id))
    _carry_over(db, current, started)
    _vectors_into(db, current, 0)  # reused only: the writer's publish embeds its share (`fill`)
    return indexed


def rebuild(
    mind_id: str,
    items: Iterable[dict[str, Any]] | None = None,
    base: Path | None = None,
    embed_budget: int = REBUILD_EMBED_BUDGET,
) -> Rebuilt:
    """Build a mind's index from the table (or `items`) into a new generation.

    The slow part — reading the table and indexing — runs without the writer lock, into a private
    temp file; only the final merge with whatever was published meanwhile, and the publish, hold it.
    """
    folder = generations.mind_dir(mind_id, base)
    folder.mkdir(parents=True, exist_ok=True)
    started = clock.to_iso(clock.now() - timedelta(seconds=REBUILD_OVERLAP_SECONDS))
    temp = generations.temp_path(folder)
    db = generations.open_build(temp)
    try:
        indexed = _index_all(db, mind_id, _memory_items(mind_id) if items is None else items)
        reused, embedded = _vectors_into(db, generations.current_generation(folder), embed_budget, base)
        with generations.writer_lock(folder):
            current = generations.current_generation(folder)
            carried = _carry_over(db, current, started) if current is not None and current.exists() else 0
            db.close()
            generation = generations.publish(folder, temp)
        return Rebuilt(mind_id, indexed, carried, generation, reused, embedded)
    finally:
        with contextlib.suppress(sqlite3.ProgrammingError):
            db.close()
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
