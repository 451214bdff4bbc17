"""The writer: builds one mind's next generation from a copy of the current one, then publishes it."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path
from types import TracebackType

from synapse.search import generations, schema
from synapse.search.documents import Change, Unindexable


class Writer:
    """One mind's next generation, built under the writer lock.

    Use as a context manager: changes go in with `apply`, `publish` makes them visible; leaving
    without publishing (or on an error) throws the temp file away and the published state stays.
    """

    def __init__(self, mind_id: str, base: Path | None = None) -> None:
        self.mind_id = mind_id
        self.folder = generations.mind_dir(mind_id, base)
        self.changed = 0
        self._lock = generations.writer_lock(self.folder)
        self._temp: Path | None = None
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> Writer:
        self._lock.__enter__()
        try:
            self._temp = generations.temp_path(self.folder)
            current = generations.current_generation(self.folder)
            if current is not None and current.exists():
                shutil.copyfile(current, self._temp)
                self._db = generations.open_build(self._temp)
            else:
                self._db = generations.open_build(self._temp)
                schema.create_schema(self._db, self.mind_id)
            self._db.execute("BEGIN")
        except BaseException:
            self._discard()
            self._lock.__exit__(None, None, None)
            raise
        return self

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
        return applied

    def publish(self) -> Path | None:
        """Publish if anything changed (a replayed batch publishes nothing); returns the new generation."""
        assert self._db is not None and self._temp is not None
        if self.changed:
            schema.drop_old_tombstones(self._db)
        self._db.execute("COMMIT")
        if not self.changed:
            return None
        self._db.close()
        self._db = None
        published = generations.publish(self.folder, self._temp)
        self._temp = None
        return published

    def _discard(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._temp is not None:
            with contextlib.suppress(FileNotFoundError):
                self._temp.unlink()
            self._temp = None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            self._discard()
        finally:
            self._lock.__exit__(kind, error, trace)
