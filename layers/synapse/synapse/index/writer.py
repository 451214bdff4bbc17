"""The writer: appends a batch to the current base's log, or builds a new base, then publishes it."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path
from types import TracebackType

from synapse import embedding
from synapse.core.observability import logger
from synapse.index import compaction, generations, rebuild, schema, vector_rows, vectors
from synapse.index.documents import Change, Unindexable


class Writer:
    """One mind's next generation, written under the writer lock.

    Use as a context manager: changes go in with `apply`, `publish` makes them visible; leaving
    without publishing (or on an error) rolls the batch back and the published state stays.

    A batch on a mind that has a base is one transaction appended to the base's log: it writes the
    pages the batch changed, whatever the mind's size. A mind without a base (its first batch), or
    whose base predates logs, gets a new base built in a temp file instead. A mind whose index is of
    an older format (`schema.SCHEMA_VERSION`) is upgraded first: in place, in the batch's own
    transaction, where `schema.IN_PLACE_UPGRADES` knows how, else rebuilt from the table into a new
    base. Searches go on reading the published generation until the new one is published.
    """

    def __init__(self, mind_id: str, base: Path | None = None) -> None:
        self.mind_id = mind_id
        self.base = base
        self.folder = generations.mind_dir(mind_id, base)
        self.changed = 0
        self.rebuilt = False  # the batch goes to a new base built from the table (a new index format)
        self.upgraded = False  # the generation was upgraded in place to the current index format
        self._upgrade = False
        self.compacted: Path | None = None
        self._lock = generations.writer_lock(self.folder)
        self._temp: Path | None = None
        self._appending: Path | None = None  # the base whose log this batch goes to
        self._db: sqlite3.Connection | None = None
        self.pointer = ""  # CURRENT's text when the lock was taken
        self._base_size: int | None = None
        self._pending: dict[str, vectors.Pending] = {}  # memories whose vector this batch writes
        self.embedded = 0
        self.vectors_deferred = 0  # vectors the model failed to make: published without, filled in later
        self.vectors_complete = False  # the generation holds every live memory's vector

    @property
    def indexed(self) -> bool:
        """Whether the mind had a published generation when the lock was taken."""
        return bool(generations.base_name(self.pointer))

    def __enter__(self) -> Writer:
        self._lock.__enter__()
        try:
            self.pointer = generations.pointer_text(self.folder)
            name = generations.base_name(self.pointer)
            current = self.folder / name if name else None
            header = None if current is None else generations.read_header(current)
            if current is not None and header is not None:
                self._open_next(current, header)
            else:
                self._temp = generations.temp_path(self.folder)
                self._db = generations.open_build(self._temp)
                schema.create_schema(self._db, self.mind_id)
            assert self._db is not None
            self._db.execute("BEGIN")
            if self._upgrade:
                self.upgraded = schema.upgrade_in_place(self._db)
                assert self.upgraded
                logger.info("index upgraded in place", extra={"mind_id": self.mind_id})
        except BaseException:
            self._discard()
            self._lock.__exit__(None, None, None)
            raise
        return self

    def _open_next(self, current: Path, header: bytes) -> None:
        """The next generation on top of `current`: its log, or a copy of a base from before logs;
        a whole new base from the table when `current` is of another index format."""
        if generations.header_is_log_mode(header):
            self._appending = current
            self._base_size = generations.header_size(header)
            self._db = generations.open_append(current)
        else:
            self._temp = generations.temp_path(self.folder)
            shutil.copyfile(current, self._temp)
            self._db = generations.open_build(self._temp)
        version = schema.schema_of(self._db)
        if version == schema.SCHEMA_VERSION:
            return
        if version in schema.IN_PLACE_UPGRADES:
            self._upgrade = True  # in the batch's transaction, once it has begun
            return
        self._discard()
        self._appending = None
        self._temp = generations.temp_path(self.folder)
        self._db = generations.open_build(self._temp)
        indexed = rebuild.upgrade_into(self._db, self.mind_id, current)
        self.rebuilt = True
        logger.info("index rebuilt in a new format", extra={"mind_id": self.mind_id, "indexed": indexed})

    def apply(self, change: Change) -> bool:
        """Apply one change atomically (a savepoint), so a failing change leaves no half of itself."""
        assert self._db is not None
        if change.mind_id != self.mind_id:
            raise Unindexable(f"change for mind {change.mind_id!r} given to the writer of {self.mind_id!r}")
        self._db.execute("SAVEPOINT change")
        try:
            applied = schema.apply_change(self._db, change)
        except BaseException:
            self._db.execute("ROLLBACK TO change")
            self._db.execute("RELEASE change")
            raise
        self._db.execute("RELEASE change")
        self.changed += int(applied)
        if applied:
            self._note_vector(change)
        return applied

    def _note_vector(self, change: Change) -> None:
        if change.doc is None:
            self._pending.pop(change.memory_id, None)
            return
        doc = change.doc
        text = vectors.embedded_text(doc.key, doc.content, ", ".join(doc.tags))
        self._pending[doc.id] = vectors.Pending(doc.id, doc.version, text)

    def _write_vectors(self) -> None:
        """The batch's vectors, in its transaction: those of the changes it applied (the same text's
        vector reused), then a bounded share of what an older index or a rebuild left without one.

        A model that cannot embed never costs the batch its rows: they are published without those
        vectors, the generation records them as missing (`vectors_deferred`: the caller marks the
        mind, `deferred`)."""
        assert self._db is not None
        model = vectors.embedder()
        if model is None:
            return
        before = self._db.total_changes
        vectors.prepare(self._db, model)
        self._db.execute("SAVEPOINT vectors")
        try:
            self.embedded = vectors.write(self._db, model, self._pending.values())
            self.embedded += vectors.fill(self._db, model, vectors.FILL_PER_BATCH)
        except embedding.EmbeddingError as error:
            self._db.execute("ROLLBACK TO vectors")
            self.vectors_deferred = max(len(self._pending), 1)
            vectors.mark_incomplete(self._db)
            vectors.model_failed(
                vectors.INDEX_VECTORS_DEFERRED, error, self.vectors_deferred, mind_id=self.mind_id
            )
        self._db.execute("RELEASE vectors")
        self.vectors_complete = vectors.is_complete(self._db)
        self._pending.clear()
        if self._db.total_changes != before:
            self.changed = max(self.changed, 1)

    def publish(self) -> Path | None:
        """Publish if anything changed (a replayed batch publishes nothing); returns the generation
        (the base) that now holds the batch."""
        assert self._db is not None
        self._write_vectors()
        if not self.changed and not self.rebuilt and not self.upgraded:
            self._db.execute("ROLLBACK")
            return None
        schema.drop_old_tombstones(self._db)
        self._db.execute("COMMIT")
        self._db.close()
        self._db = None
        if self._appending is not None:
            generations.publish_log(self.folder, self._appending, self.pointer)
            if compaction.due(self._appending, self._base_size):
                try:
                    self.compacted = _compact(self.folder, self._appending)
                except (OSError, sqlite3.Error) as error:  # the batch is published; the next one retries
                    logger.warning(
                        "index compaction failed", extra={"mind_id": self.mind_id, "error": str(error)}
                    )
            return self.compacted or self._appending
        assert self._temp is not None
        published = generations.publish(self.folder, self._temp)
        self._temp = None
        return published

    def _discard(self) -> None:
        if self._db is not None:
            self._db.close()  # an uncommitted batch is rolled back: the log's committed part stays
            self._db = None
        if self._temp is not None:
            for path in (self._temp, generations.log_of(self._temp)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            self._temp = None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            self._discard()
        finally:
            self._lock.__exit__(kind, error, trace)


def _compact(folder: Path, generation: Path) -> Path:
    """A new base: `generation` with its log checkpointed in. Caller holds the writer lock."""
    temp = generations.temp_path(folder)
    try:
        changed = compaction.compact_into(generation, temp, vector_rows.forget_batches)
        published = generations.publish(folder, temp)
        compaction.record_changes(published, generation, changed)
        return published
    finally:
        for path in (temp, generations.log_of(temp)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def compact(mind_id: str, base: Path | None = None) -> Path | None:
    """Compact a mind's log into a new base now, whatever its size (None: nothing to compact)."""
    folder = generations.mind_dir(mind_id, base)
    with generations.writer_lock(folder):
        current = generations.current_generation(folder)
        if current is None or not current.exists() or not generations.is_log_mode(current):
            return None
        if generations.log_bytes(current) == 0:
            return None
        return _compact(folder, current)
