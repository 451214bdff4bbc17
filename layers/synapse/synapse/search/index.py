"""The per-mind full-text index: SQLite FTS5 snapshot files, written by one writer, read by many.

Layout under the index root (EFS in AWS, a local folder otherwise):

    <root>/<mind id>/gen-000042.sqlite   published generations; never modified once published
    <root>/<mind id>/CURRENT             the name of the current generation (swapped with os.replace)
    <root>/<mind id>/tmp-*.sqlite        a generation being built (never opened by readers)
    <root>/<mind id>/.writer.lock        held by whoever builds the next generation

A writer copies the current generation into a temp file, applies a batch of changes, and publishes
it as the next generation by renaming it and swapping CURRENT. Readers open the generation CURRENT
names with `mode=ro&immutable=1` (no locks, no WAL, nothing SQLite must coordinate over NFS) and
keep the connection while CURRENT is unchanged. A superseded generation stays on disk for a grace
period, so a reader that opened it a moment ago still gets consistent answers, then is deleted.

Every change is version-gated and idempotent, because the stream delivers at least once and may
replay old records: an upsert applies only if its version is newer than the indexed one, a removal
only if it is at least the indexed one, and a removal leaves a tombstone so a replayed older image
cannot bring a deleted memory back (for two days: longer than the stream keeps any record).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import shutil
import sqlite3
import threading
import time
import unicodedata
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import process_partial_response

from synapse.core import clock
from synapse.core.observability import metrics
from synapse.core.settings import get_settings
from synapse.memory.model import Priority
from synapse.storage import tables

SCHEMA_VERSION = "1"
GRACE_SECONDS = 300.0
# A tombstone (a removed memory's row, `updated_at` = when it was applied) guards against replays of
# the memory's older records; the stream keeps a record 24 hours and a memory id never returns, so
# after two days there is nothing left to guard against and it is dropped at the next publish.
TOMBSTONE_SECONDS = 2 * 86400.0
STALE_TEMP_SECONDS = 3600.0
CURRENT = "CURRENT"
LOCK = ".writer.lock"
# Key and tags weigh more than content (SPEC §5). FTS5's bm25() is lower-is-better.
BM25_WEIGHTS = (3.0, 1.0, 2.0)
# A memory of a rebuild's source may have changed while the rebuild read the table; anything the
# current generation holds that was updated this close to the rebuild's start is carried over.
REBUILD_OVERLAP_SECONDS = 30.0

_MIND_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_GENERATION = re.compile(r"^gen-(\d{6,})\.sqlite$")

_SCHEMA = """
CREATE VIRTUAL TABLE fts USING fts5(
    key, content, tags, raw_key UNINDEXED, raw_content UNINDEXED, raw_tags UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
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


class Unindexable(Exception):
    """A change that cannot be applied (malformed record, unsafe mind id): a poison record."""


# ---------------------------------------------------------------- folding

# Snippet markers: control characters, which `fold` turns into spaces, so text never contains them.
MARK_OPEN, MARK_CLOSE, ELLIPSIS = "\x02", "\x03", "\x04"
_CONTROLS = {code: " " for code in [*range(32), 127]}


@functools.cache
def _fold_char(ch: str) -> str:
    if unicodedata.category(ch) in {"Cc", "Cs"}:
        return " "
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if len(base) == 1 else ch


def fold(text: str) -> str:
    """Strip diacritics from every script, one character for one character.

    unicode61's `remove_diacritics` only knows Latin letters (it leaves Ё, ά, ῆ alone), so text is
    folded before FTS5 sees it, documents and queries alike; case is left to the tokenizer. Keeping
    the length lets a snippet cut from the folded text be mapped back onto the original.
    """
    return text.translate(_CONTROLS) if text.isascii() else text.translate(_FOLDS)


class _FoldTable(dict[int, str]):
    """str.translate table filled on first sight of each character."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLDS = _FoldTable()


_MARKS = re.compile(f"([{MARK_OPEN}{MARK_CLOSE}])")


def restore_snippet(
    snippet: str, columns: Iterable[tuple[str | None, str | None]], mark: tuple[str, str]
) -> str:
    """Map a snippet cut from folded text back onto the original text of its column.

    `columns` are the row's (folded, original) texts, given only where folding changed the text
    (None elsewhere): most rows (plain ASCII and the like) need no mapping at all.
    """
    lead, trail = snippet.startswith(ELLIPSIS), snippet.endswith(ELLIPSIS) and len(snippet) > 1
    body = snippet.strip(ELLIPSIS)
    plain = body.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")
    for folded, original in columns:
        at = folded.find(plain) if plain and folded and original else -1
        if at >= 0 and original is not None:
            out, i = [], at
            for piece in _MARKS.split(body):
                if piece in (MARK_OPEN, MARK_CLOSE):
                    out.append(piece)
                else:
                    out.append(original[i : i + len(piece)])
                    i += len(piece)
            body = "".join(out)
            break
    body = body.replace(MARK_OPEN, mark[0]).replace(MARK_CLOSE, mark[1])
    return ("…" if lead else "") + body + ("…" if trail else "")


# ---------------------------------------------------------------- what gets indexed


@dataclass(frozen=True)
class Doc:
    """The indexed part of a memory."""

    id: str
    mind_id: str
    category: str
    key: str
    content: str
    tags: tuple[str, ...]
    priority: str
    updated_at: str
    expires_at: str | None
    version: int

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Doc:
        """From a memory item of the table (plain values, as `tables.load` returns them)."""
        try:
            doc = cls(
                id=str(item["id"]),
                mind_id=str(item["mind_id"]),
                category=str(item["category"]),
                key=str(item["key"]),
                content=str(item["content"]),
                tags=tuple(str(t) for t in item.get("tags") or ()),
                priority=str(item.get("priority") or Priority.NORMAL.value),
                updated_at=str(item["updated_at"]),
                expires_at=str(item["expires_at"]) if item.get("expires_at") else None,
                version=int(item["version"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise Unindexable(f"not a memory item: {error!r}") from None
        if doc.priority not in Priority.__members__.values():
            raise Unindexable(f"unknown priority {doc.priority!r}")
        return doc

    @property
    def priority_rank(self) -> int:
        return Priority(self.priority).rank


@dataclass(frozen=True)
class Change:
    """One memory's new state (`doc`) or its removal at `version` (`doc is None`)."""

    mind_id: str
    memory_id: str
    version: int
    doc: Doc | None

    @classmethod
    def upsert(cls, doc: Doc) -> Change:
        return cls(doc.mind_id, doc.id, doc.version, doc)

    @classmethod
    def removal(cls, item: dict[str, Any]) -> Change:
        try:
            return cls(str(item["mind_id"]), str(item["id"]), int(item["version"]), None)
        except (KeyError, TypeError, ValueError) as error:
            raise Unindexable(f"not a memory item: {error!r}") from None


def is_memory_item(keys: dict[str, Any]) -> bool:
    """Only the memory items are indexed; id pointers and tag copies are not."""
    sort_key = keys.get("sk")
    return isinstance(sort_key, str) and sort_key.startswith(tables.MEMORY_PREFIX)


# ---------------------------------------------------------------- paths


def root() -> Path:
    return Path(get_settings().index_dir)


def mind_dir(mind_id: str, base: Path | None = None) -> Path:
    """The mind's folder; the id is checked so a record can never address a path outside the root."""
    if not _MIND_ID.match(mind_id):
        raise Unindexable(f"unsafe mind id {mind_id!r}")
    return (base or root()) / mind_id


def current_generation(folder: Path) -> Path | None:
    try:
        name = (folder / CURRENT).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return folder / name if _GENERATION.match(name) else None


def _generation_number(path: Path | None) -> int:
    found = _GENERATION.match(path.name) if path else None
    return int(found.group(1)) if found else 0


def remove_mind(mind_id: str, base: Path | None = None) -> bool:
    """Delete every file of a mind's index (the mind is gone). Returns whether anything was there."""
    folder = mind_dir(mind_id, base)
    if not folder.exists():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def sweep(base: Path | None = None) -> list[str]:
    """Remove the index of every mind that no longer exists; returns their ids.

    The indexer removes a mind's index when it sees the mind's memories deleted after the mind; a
    mind whose memories were all deleted before it leaves no such record, so a daily sweep catches it.
    """
    folder = base or root()
    if not folder.is_dir():
        return []
    gone = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and _MIND_ID.match(entry.name) and not mind_exists(entry.name):
            with _writer_lock(entry):
                pass  # let a writer in flight finish first
            remove_mind(entry.name, folder)
            gone.append(entry.name)
    return gone


# ---------------------------------------------------------------- applying changes


def _create_schema(db: sqlite3.Connection, mind_id: str) -> None:
    db.executescript(_SCHEMA)
    db.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?)",
        [("schema", SCHEMA_VERSION), ("mind_id", mind_id)],
    )


def _drop_indexed(db: sqlite3.Connection, rowid: int) -> None:
    db.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
    db.execute("DELETE FROM doc_tags WHERE rowid = ?", (rowid,))


def drop_old_tombstones(db: sqlite3.Connection) -> int:
    """Remove tombstones older than TOMBSTONE_SECONDS (no stream record can contradict them)."""
    cutoff = clock.to_iso(clock.now() - timedelta(seconds=TOMBSTONE_SECONDS))
    found = db.execute(
        "DELETE FROM docs WHERE deleted = 1 AND (updated_at IS NULL OR updated_at < ?)", (cutoff,)
    )
    return found.rowcount


def apply_change(db: sqlite3.Connection, change: Change) -> bool:
    """Apply one change if its version allows; True when the index changed. Idempotent."""
    row = db.execute("SELECT rowid, version, deleted FROM docs WHERE id = ?", (change.memory_id,)).fetchone()
    doc = change.doc
    if doc is None:
        if row is not None and (row[1] > change.version or (row[2] and row[1] == change.version)):
            return False
        removed_at = clock.to_iso(clock.now())
        if row is None:
            db.execute(
                "INSERT INTO docs (id, version, deleted, updated_at) VALUES (?, ?, 1, ?)",
                (change.memory_id, change.version, removed_at),
            )
            return True
        _drop_indexed(db, row[0])
        db.execute(
            "UPDATE docs SET version = ?, deleted = 1, category = NULL, key = NULL, priority = NULL,"
            " priority_rank = NULL, updated_at = ?, expires_at = NULL WHERE rowid = ?",
            (change.version, removed_at, row[0]),
        )
        return True
    if row is not None and row[1] >= doc.version:
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
    if row is None:
        rowid = db.execute(
            "INSERT INTO docs (version, category, key, priority, priority_rank, updated_at, expires_at, id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*fields, doc.id),
        ).lastrowid
        assert rowid is not None
    else:
        rowid = int(row[0])
        _drop_indexed(db, rowid)
        db.execute(
            "UPDATE docs SET version = ?, category = ?, key = ?, priority = ?, priority_rank = ?,"
            " updated_at = ?, expires_at = ?, deleted = 0 WHERE rowid = ?",
            (*fields, rowid),
        )
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
    return True


# ---------------------------------------------------------------- the writer


@contextlib.contextmanager
def _writer_lock(folder: Path) -> Iterator[None]:
    """One writer per index file: the indexer (reserved concurrency 1) and a rebuild take turns."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a+") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_build(path: Path) -> sqlite3.Connection:
    # A temp file no reader ever opens: a crash just leaves garbage that cleanup removes, so the
    # journal lives in memory and durability comes from one fsync before publishing.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = MEMORY")
    db.execute("PRAGMA synchronous = OFF")
    return db


def publish(folder: Path, built: Path, now: float | None = None) -> Path:
    """Make `built` the next generation: rename it, then swap CURRENT atomically. Caller holds the lock."""
    _fsync(built)
    previous = current_generation(folder)
    target = folder / f"gen-{_generation_number(previous) + 1:06d}.sqlite"
    os.replace(built, target)
    pointer = folder / f"{CURRENT}.{uuid.uuid4().hex}.tmp"
    pointer.write_text(target.name)
    _fsync(pointer)
    os.replace(pointer, folder / CURRENT)
    with contextlib.suppress(OSError):
        _fsync(folder)
    if previous is not None and previous.exists():
        # Its mtime now says when it was retired: the grace period runs from here.
        os.utime(previous)
    collect_garbage(folder, now)
    return target


def collect_garbage(folder: Path, now: float | None = None) -> list[Path]:
    """Delete generations retired longer than the grace period ago, and temp files of crashed writers."""
    moment = time.time() if now is None else now
    keep = current_generation(folder)
    removed = []
    for path in folder.iterdir():
        age = moment - path.stat().st_mtime
        stale_generation = _GENERATION.match(path.name) and path != keep and age > GRACE_SECONDS
        stale_temp = path.name.startswith(("tmp-", f"{CURRENT}.")) and age > STALE_TEMP_SECONDS
        if stale_generation or stale_temp:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


class Writer:
    """Builds one mind's next generation from a copy of the current one, under the writer lock.

    Use as a context manager: changes go in with `apply`, `publish` makes them visible; leaving
    without publishing (or on an error) throws the temp file away and the published state stays.
    """

    def __init__(self, mind_id: str, base: Path | None = None) -> None:
        self.mind_id = mind_id
        self.folder = mind_dir(mind_id, base)
        self.changed = 0
        self.published: Path | None = None
        self._lock = _writer_lock(self.folder)
        self._temp: Path | None = None
        self._db: sqlite3.Connection | None = None

    def __enter__(self) -> Writer:
        self._lock.__enter__()
        try:
            self._temp = self.folder / f"tmp-{uuid.uuid4().hex}.sqlite"
            current = current_generation(self.folder)
            if current is not None and current.exists():
                shutil.copyfile(current, self._temp)
                self._db = _open_build(self._temp)
            else:
                self._db = _open_build(self._temp)
                _create_schema(self._db, self.mind_id)
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
            applied = apply_change(self._db, change)
        except BaseException:
            self._db.execute("ROLLBACK TO change")
            self._db.execute("RELEASE change")
            raise
        self._db.execute("RELEASE change")
        self.changed += int(applied)
        return applied

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None
        return self._db

    def publish(self, now: float | None = None) -> Path | None:
        """Publish if anything changed (a replayed batch publishes nothing); returns the new generation."""
        assert self._db is not None and self._temp is not None
        if self.changed:
            drop_old_tombstones(self._db)
        self._db.execute("COMMIT")
        if not self.changed:
            return None
        self._db.close()
        self._db = None
        self.published = publish(self.folder, self._temp, now)
        self._temp = None
        return self.published

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


def apply_batch(mind_id: str, changes: Iterable[Change], base: Path | None = None) -> Path | None:
    """Apply a batch of one mind's changes and publish one generation (None if nothing changed)."""
    with Writer(mind_id, base) as writer:
        for change in changes:
            writer.apply(change)
        return writer.publish()


# ---------------------------------------------------------------- rebuild


def _memory_items(mind_id: str) -> Iterator[dict[str, Any]]:
    yield from tables.query_all(
        TableName=tables.memories_table(),
        KeyConditionExpression="pk = :mind AND begins_with(sk, :prefix)",
        ExpressionAttributeValues=tables.values(mind=mind_id, prefix=tables.MEMORY_PREFIX),
    )


def _carry_over(db: sqlite3.Connection, current: Path, started_iso: str) -> int:
    """Bring in what the current generation knows that the table read may have missed.

    Per id the higher version wins (a change indexed while the rebuild was reading); tombstones
    carry over (so old replays stay harmless); a live doc the table no longer holds is dropped
    unless it was updated after the rebuild started (then the table read may simply have passed it).
    Called outside a transaction (SQLite cannot ATTACH inside one).
    """
    mind_id = db_mind_id(db)
    db.execute("ATTACH DATABASE ? AS old", (f"file:{quote(str(current))}?mode=ro&immutable=1",))
    carried = 0
    try:
        db.execute("BEGIN")
        rows = db.execute(
            "SELECT o.id, o.version, o.deleted, o.category, o.key, o.priority, o.updated_at, o.expires_at,"
            " coalesce(f.raw_content, f.content),"
            " (SELECT group_concat(t.tag, char(31)) FROM old.doc_tags t WHERE t.rowid = o.rowid)"
            " FROM old.docs o LEFT JOIN old.fts f ON f.rowid = o.rowid"
            " LEFT JOIN main.docs n ON n.id = o.id"
            " WHERE (n.id IS NULL AND (o.deleted = 1 OR o.updated_at >= ?))"
            " OR (o.deleted = 1 AND o.version >= n.version) OR o.version > n.version",
            (started_iso,),
        ).fetchall()
        for (
            memory_id,
            version,
            deleted,
            category,
            key,
            priority,
            updated_at,
            expires_at,
            content,
            tags,
        ) in rows:
            change = Change(mind_id, memory_id, version, None)
            if not deleted:
                doc = Doc(
                    id=memory_id,
                    mind_id=mind_id,
                    category=category,
                    key=key,
                    content=content or "",
                    tags=tuple(tags.split("\x1f")) if tags else (),
                    priority=priority,
                    updated_at=updated_at,
                    expires_at=expires_at,
                    version=version,
                )
                change = Change.upsert(doc)
            carried += int(apply_change(db, change))
            if deleted and updated_at:  # a tombstone keeps its age
                db.execute("UPDATE docs SET updated_at = ? WHERE id = ?", (updated_at, memory_id))
        drop_old_tombstones(db)
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.execute("DETACH DATABASE old")
    return carried


def db_mind_id(db: sqlite3.Connection) -> str:
    row = db.execute("SELECT value FROM main.meta WHERE name = 'mind_id'").fetchone()
    return str(row[0])


@dataclass(frozen=True)
class Rebuilt:
    mind_id: str
    indexed: int
    carried_over: int
    generation: Path | None


def rebuild(mind_id: str, items: Iterable[dict[str, Any]] | None = None, base: Path | None = None) -> Rebuilt:
    """Build a mind's index from the table (or `items`) into a new generation.

    The slow part — reading the table and indexing — runs without the writer lock, into a private
    temp file; only the final merge with whatever was published meanwhile, and the publish, hold it.
    """
    folder = mind_dir(mind_id, base)
    folder.mkdir(parents=True, exist_ok=True)
    started = clock.to_iso(clock.now() - timedelta(seconds=REBUILD_OVERLAP_SECONDS))
    temp = folder / f"tmp-{uuid.uuid4().hex}.sqlite"
    db = _open_build(temp)
    try:
        _create_schema(db, mind_id)
        db.execute("BEGIN")
        indexed = 0
        for item in _memory_items(mind_id) if items is None else items:
            indexed += int(apply_change(db, Change.upsert(Doc.from_item(item))))
        db.execute("COMMIT")
        db.execute("INSERT INTO fts (fts) VALUES ('optimize')")
        with _writer_lock(folder):
            current = current_generation(folder)
            carried = _carry_over(db, current, started) if current is not None and current.exists() else 0
            db.close()
            generation = publish(folder, temp)
        return Rebuilt(mind_id, indexed, carried, generation)
    finally:
        with contextlib.suppress(sqlite3.ProgrammingError):
            db.close()
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


# ---------------------------------------------------------------- readers


# Open generations kept per thread, least recently used closed first: one search container serves
# every mind, and each connection holds a file descriptor and a page cache.
MAX_OPEN_READERS = 32


class _Readers(threading.local):
    def __init__(self) -> None:
        # CURRENT's path → (the generation's file name, its open connection), oldest use first
        self.open: OrderedDict[str, tuple[str, sqlite3.Connection]] = OrderedDict()


_readers = _Readers()


def open_generation(path: Path) -> sqlite3.Connection:
    """Open a published generation read-only; `immutable` because it never changes after publishing."""
    return sqlite3.connect(f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def reader(mind_id: str, base: Path | None = None) -> sqlite3.Connection | None:
    """The mind's current generation, opened once and reused while CURRENT still names it.

    CURRENT is read on every call (an open() revalidates it over NFS, where a stat could be served
    stale from the attribute cache). None when the mind has no index yet, or it went with its mind.
    """
    pointer = os.path.join(base or root(), mind_dir(mind_id, base).name, CURRENT)
    cached = _readers.open.get(pointer)
    try:
        with open(pointer, "rb") as handle:
            name = handle.read().decode("ascii", "replace").strip()
    except (FileNotFoundError, NotADirectoryError):
        name = ""
    if cached is not None and cached[0] == name:
        _readers.open.move_to_end(pointer)
        return cached[1]
    if cached is not None:
        cached[1].close()
        del _readers.open[pointer]
    if not _GENERATION.match(name):
        return None
    try:
        connection = open_generation(Path(pointer).parent / name)
        connection.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    _readers.open[pointer] = (name, connection)
    while len(_readers.open) > MAX_OPEN_READERS:
        _readers.open.popitem(last=False)[1][1].close()
    return connection


def live_rows(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Everything a search can see, in a stable order: for comparing two indexes of the same mind."""
    return db.execute(
        "SELECT d.id, d.version, d.category, d.key, d.priority, d.updated_at, d.expires_at,"
        " f.key, f.content, f.tags, f.raw_key, f.raw_content, f.raw_tags,"
        " (SELECT group_concat(tag, ',')"
        "  FROM (SELECT tag FROM doc_tags t WHERE t.rowid = d.rowid ORDER BY tag))"
        " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0 ORDER BY d.id"
    ).fetchall()


# ---------------------------------------------------------------- stream batches


def change_from_record(record: dict[str, Any]) -> Change | None:
    """A DynamoDB stream record (Lambda's event shape) → its change to the index; None if not indexed."""
    body = record.get("dynamodb") or {}
    try:
        keys = tables.load(body.get("Keys") or {})
    except (TypeError, ValueError, AttributeError) as error:
        raise Unindexable(f"unreadable Keys: {error!r}") from None
    if not is_memory_item(keys):
        return None
    name = record.get("eventName")
    image_name = "OldImage" if name == "REMOVE" else "NewImage"
    if name not in {"INSERT", "MODIFY", "REMOVE"} or not body.get(image_name):
        raise Unindexable(f"{name!r} record without {image_name}")
    try:
        item = tables.load(body[image_name])
    except (TypeError, ValueError, AttributeError) as error:
        raise Unindexable(f"unreadable {image_name}: {error!r}") from None
    if item.get("pk") != keys.get("pk"):
        raise Unindexable("image and keys disagree on the mind")
    change = Change.removal(item) if name == "REMOVE" else Change.upsert(Doc.from_item(item))
    mind_dir(change.mind_id)  # refuses an id that is not safe as a folder name
    return change


def mind_exists(mind_id: str) -> bool:
    return tables.get(tables.minds_table(), tables.mind_key(mind_id)) is not None


class StreamBatch:
    """One invocation's records: a writer per mind, one published generation per mind.

    A mind that no longer exists (its mind item is gone, so it is being or has been deleted) has
    its index files removed and its records skipped: that is how deleting a mind deletes its index.
    It is checked when the batch removes memories of that mind, or before a first generation is
    created, so a late replay never resurrects a deleted mind's index.
    """

    def __init__(self, base: Path | None = None) -> None:
        self.base = base
        self.writers: dict[str, Writer] = {}
        self.gone: set[str] = set()
        self.published: dict[str, Path | None] = {}
        self._stack = contextlib.ExitStack()

    def prepare(self, records: Iterable[dict[str, Any]]) -> None:
        suspects: set[str] = set()
        for record in records:
            try:
                keys = tables.load((record.get("dynamodb") or {}).get("Keys") or {})
                mind_id = keys.get("pk")
                if not is_memory_item(keys) or not isinstance(mind_id, str):
                    continue
                folder = mind_dir(mind_id, self.base)
            except (Unindexable, TypeError, ValueError, AttributeError):
                continue  # staging reports it as a failed record
            if record.get("eventName") == "REMOVE" or current_generation(folder) is None:
                suspects.add(mind_id)
        for mind_id in sorted(suspects):
            if not mind_exists(mind_id):
                self.gone.add(mind_id)
                with _writer_lock(mind_dir(mind_id, self.base)):
                    pass  # wait for a writer in flight, then remove everything
                remove_mind(mind_id, self.base)

    def stage(self, record: dict[str, Any]) -> bool:
        """Apply one record to its mind's next generation; raises for a record that cannot be applied."""
        change = change_from_record(record)
        if change is None or change.mind_id in self.gone:
            return False
        writer = self.writers.get(change.mind_id)
        if writer is None:
            writer = self._stack.enter_context(Writer(change.mind_id, self.base))
            self.writers[change.mind_id] = writer
        return writer.apply(change)

    def publish(self) -> dict[str, Path | None]:
        for mind_id, writer in self.writers.items():
            self.published[mind_id] = writer.publish()
        return self.published

    def close(self) -> None:
        self._stack.close()
        self.writers.clear()


def index_stream(event: dict[str, Any], context: Any, processor: Any) -> dict[str, Any]:
    """The indexer: apply a stream batch, publish once per mind, report the records that failed.

    Records that cannot be applied are reported (`batchItemFailures`) so Lambda retries from them and
    finally hands them to the on-failure destination; a failure to publish fails the whole batch,
    which is safe to retry because applying is idempotent.
    """
    batch = StreamBatch()
    try:
        batch.prepare(event.get("Records") or [])
        response = process_partial_response(
            event=event,
            record_handler=lambda record: batch.stage(record.raw_event),
            processor=processor,
            context=context,
        )
        published = batch.publish()
        applied = sum(writer.changed for writer in batch.writers.values())
    finally:
        batch.close()
    metrics.add_metric(name="IndexChangesApplied", unit=MetricUnit.Count, value=applied)
    metrics.add_metric(
        name="IndexGenerationsPublished", unit=MetricUnit.Count, value=sum(map(bool, published.values()))
    )
    return dict(response)
