"""A generation's vectors as one matrix, loaded once per reader and kept up to date.

Row i of a `Matrix` is memory `ids[i]` (its docs rowid `rowids[i]`), float32 unit rows: what search
by meaning and a write's `similar` compare a vector with. Each batch that writes vectors notes their
rowids under its number (`vector_rows.note_batch`), so a reader that holds the matrix of a base's
generation reads only the rows written since when CURRENT names a later generation of the same base
(a batch appended to its log): `refreshed`. Only a new base (a compaction, a rebuild) is read whole.
A generation of schema 5 (rows by memory id, each with its batch's `seq`) is read as it is, until
its next batch moves it to schema 6 (`vector_rows.key_by_doc`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from synapse.index import readers, vector_rows

DIMS = 384


def has_table(db: sqlite3.Connection) -> bool:
    return vector_rows.has_table(db)


def has_seq(db: sqlite3.Connection) -> bool:
    """Whether schema 5's rows say which batch wrote them (a table from before `seq` does not)."""
    return any(column[1] == "seq" for column in db.execute("PRAGMA table_info(vectors)"))


class Matrix:
    """A generation's vectors, loaded once per opened generation: row i is memory `ids[i]`.

    `seq` is the last batch whose rows it holds: the next generation of the same base (a batch
    appended to its log) is read from there on (`refreshed`), not whole. A row whose memory was
    removed since may linger until the base is compacted: its docs row is a tombstone, and every
    reader of the matrix joins the live docs."""

    def __init__(self, ids: list[str], rowids: Any, matrix: Any, seq: int | None = None) -> None:
        self.ids = ids
        self.rowids = rowids  # numpy int64 (n,): the docs rowids
        self.vectors = matrix  # numpy float32 (n, DIMS), unit rows (a view of `_store`'s first n)
        self._store = matrix  # room for rows appended by later batches
        self.seq = seq  # None: a generation without `seq` (read whole each time)
        self._rows: dict[str, int] | None = None

    @property
    def nbytes(self) -> int:
        """What it holds in memory, about (the ids as ~80-byte strings): `readers` bounds the sum."""
        return int(self._store.nbytes + self.rowids.nbytes) + 80 * len(self.ids)

    def updated(self, rows: list[Any], changed: Any, seq: int) -> Matrix:
        """This matrix with `rows` ((docs rowid, id, …), vectors `changed`) written over or added:
        the next generation's. Changes this one in place (its reader has moved on to the next): an
        added row costs its own bytes, not a copy of the matrix (the store grows by doubling)."""
        import numpy as np

        added: list[int] = []
        for at, row in enumerate(rows):
            found = self.row_of(row[1])
            if found is None:
                added.append(at)
            else:
                self._store[found] = changed[at]
                self.rowids[found] = row[0]
        n = len(self.ids)
        if added:
            if n + len(added) > len(self._store):
                grown = np.empty((max(2 * len(self._store), n + len(added), 64), DIMS), dtype=np.float32)
                grown[:n] = self._store[:n]
                self._store = grown
            self._store[n : n + len(added)] = changed[added]
            rows_of = self._rows if self._rows is not None else {}
            for offset, at in enumerate(added):
                self.ids.append(rows[at][1])
                rows_of[rows[at][1]] = n + offset
            self._rows = rows_of if self._rows is not None else None
            fresh = np.fromiter((rows[at][0] for at in added), dtype=np.int64, count=len(added))
            self.rowids = np.concatenate([self.rowids, fresh])
        following = Matrix(self.ids, self.rowids, self._store[: len(self.ids)], seq)
        following._store, following._rows = self._store, self._rows
        return following

    def row_of(self, memory_id: str) -> int | None:
        if self._rows is None:
            self._rows = {memory_id: at for at, memory_id in enumerate(self.ids)}
        return self._rows.get(memory_id)

    def similarity_of(self, sims: Any, memory_id: str) -> float:
        """A memory's entry of `sims` (the question's `similarities`); 0 for one without a row."""
        at = self.row_of(memory_id)
        return 0.0 if at is None else float(sims[at])

    def similarities(self, query: Any) -> Any:
        import numpy as np

        if not len(self.ids):
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self.vectors @ np.asarray(query, dtype=np.float32).reshape(-1), dtype=np.float32)


_LIVE_VECTORS_SQL = (
    "SELECT d.rowid, d.id, v.vector FROM vectors v JOIN docs d ON d.rowid = v.rowid"
    " WHERE d.deleted = 0 AND d.version = v.version"
)
# Schema 5's layout (rows by memory id), read until the generation's next batch upgrades it.
_LIVE_BY_MEMORY_SQL = (
    "SELECT d.rowid, d.id, v.vector FROM vectors v JOIN docs d ON d.id = v.memory_id"
    " WHERE d.deleted = 0 AND d.version = v.version"
)
_CHUNK = 500  # rowids per statement, read back by rowid


def _last_seq(db: sqlite3.Connection) -> int | None:
    """The last batch whose rows the generation holds (None: no way to tell, read it whole)."""
    if vector_rows.keyed_by_doc(db):
        return vector_rows.last_seq(db) if vector_rows.has_batches(db) else None
    if not has_seq(db):
        return None
    found = db.execute("SELECT max(seq) FROM vectors").fetchone()
    return int(found[0] or 0)


def _as_matrix(rows: list[Any]) -> Any:
    import numpy as np

    blob = b"".join(r[2] for r in rows)
    return np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1).astype(np.float32)


# Rows converted at a time by `load`: the float32 matrix is allocated once, at its final size, and
# filled a slice at a time, so loading a mind's vectors costs their matrix and not three copies of
# it (rows as Python objects, their joined bytes, the float16 array): at 100,000 memories the
# function's peak was ~330 MB above the matrix's 154 MB (bench/memory_fit.py).
_LOAD_SLICE = 4096


def load(db: sqlite3.Connection) -> Matrix | None:
    """Every live memory's vector (None: this generation has none, e.g. from before vectors)."""
    import numpy as np

    if not has_table(db):
        return None
    seq = _last_seq(db)
    at_most = int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])
    matrix = np.empty((at_most, DIMS), dtype=np.float32)
    rowids = np.empty(at_most, dtype=np.int64)
    ids: list[str] = []
    cursor = db.execute(_LIVE_VECTORS_SQL if vector_rows.keyed_by_doc(db) else _LIVE_BY_MEMORY_SQL)
    while rows := cursor.fetchmany(_LOAD_SLICE):
        n = len(ids)
        if n + len(rows) > len(matrix):  # rows the count did not see (another snapshot): room for them
            matrix = np.concatenate([matrix, np.empty((len(rows), DIMS), dtype=np.float32)])
            rowids = np.concatenate([rowids, np.empty(len(rows), dtype=np.int64)])
        matrix[n : n + len(rows)] = _as_matrix(rows)
        rowids[n : n + len(rows)] = [r[0] for r in rows]
        ids.extend(r[1] for r in rows)
    found = Matrix(ids, rowids[: len(ids)].copy(), matrix[: len(ids)], seq)
    found._store = matrix  # a removed memory's room is there for the rows later batches add
    return found


def _rows_since(db: sqlite3.Connection, seq: int) -> list[Any] | None:
    """The live rows the batches after `seq` wrote (None: read the matrix whole instead)."""
    if not vector_rows.keyed_by_doc(db):
        return db.execute(f"{_LIVE_BY_MEMORY_SQL} AND v.seq > ?", (seq,)).fetchall()
    written = vector_rows.written_since(db, seq)
    if written is None:
        return None
    rows: list[Any] = []
    for at in range(0, len(written), _CHUNK):
        chunk = written[at : at + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        rows += db.execute(f"{_LIVE_VECTORS_SQL} AND v.rowid IN ({marks})", chunk).fetchall()
    return rows


def refreshed(previous: Matrix | None, db: sqlite3.Connection) -> Matrix | None:
    """The matrix of `db`, the next generation of `previous`'s base (batches appended to its log):
    `previous` with the rows written since its `seq`, not the whole."""
    if previous is None or previous.seq is None or not has_table(db):
        return load(db)
    seq = _last_seq(db)
    if seq is None or seq < previous.seq:
        return load(db)
    rows = _rows_since(db, previous.seq)
    if rows is None:
        return load(db)
    return previous.updated(rows, _as_matrix(rows), seq) if rows else previous.updated([], None, seq)


def matrix_of(db: sqlite3.Connection) -> Matrix | None:
    """The generation's matrix, loaded once per opened generation (cached with its reader); the
    next generation of the same base reads only the rows written since (`refreshed`)."""
    found: Matrix | None = readers.derived(db, "vectors", load, refreshed)
    return found
