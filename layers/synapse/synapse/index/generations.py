"""The per-mind index on disk: SQLite FTS5 files, written by one writer, read by many.

Layout under the index root (EFS in AWS, a local folder otherwise):

    <root>/<mind id>/gen-000042.sqlite      a base generation: never modified while readers may read it
    <root>/<mind id>/gen-000042.sqlite-wal  its write-ahead log: the batches since, append-only
    <root>/<mind id>/gen-000042.sqlite-changes  the base it replaced, and the pages they differ in
    <root>/<mind id>/CURRENT                "<base name> <batches in its log>" (os.replace)
    <root>/<mind id>/tmp-*.sqlite           a base being built (never opened by readers)
    <root>/<mind id>/.writer.lock           held by whoever writes the mind's index

A batch is appended to the current base's log as one SQLite WAL transaction: only the pages it
changed are written. The base is never checkpointed (every connection disables checkpoint-on-close,
and the writer auto-checkpoints never), so the log only grows; when it passes the base's
`compaction_threshold`, the writer builds a new base (base + log, `compaction`: in the retired
base brought up to date, or a copy) and publishes it.

Readers open a generation read-only through the `unix-none` VFS in exclusive locking mode: SQLite
then keeps the log's index in private memory (no `-shm`, no locks, nothing to coordinate over NFS)
and sees the committed transactions the log held when it opened; frames appended later, or a torn
tail, are not part of its snapshot (WAL frames carry checksums and commit marks). A superseded base
stays on disk, with its log, for a grace period, then is deleted; the newest superseded one stays
until the next compaction reuses it (`REUSE_MIN_BYTES`). A reader must therefore not keep using a
generation CURRENT no longer names for longer than the grace period (readers check CURRENT on every
search); NFS's close-to-open consistency has a reader that opens the reused file see its new pages.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from synapse.core.settings import get_settings
from synapse.index.documents import Unindexable

GRACE_SECONDS = 300.0
# A new base is built when the log passes T = max(COMPACT_MIN_BYTES, sqrt(COMPACT_SCALE_BYTES x
# base)). Every reader reads the whole log when it opens a generation (on average T / 2 of it, as
# the log fills from empty); a compaction copies the base. With L bytes of log per change (~31 kB,
# bench/scale.py), a change writes L + base x L / T and a cold open reads at most base + T. EFS
# bills writes at twice reads, so with w changes per cold search the bytes billed per change are
# least at T = sqrt(4 (w / s) L base): at the ~2.3 writes per search of docs/benchmarks.md's mix,
# sqrt(~290 kB x base). That bounds a cold open at 2.7x the base for a 100-memory mind (the floor),
# 1.4x at 1,000 memories and under 1.1x from 10,000, where a cold open used to read up to 29x (a
# 4 MB floor) and a large mind's log a quarter of its base (issue 23, docs/scaling.md). Since a
# compaction reuses the retired base (`compaction`, from REUSE_MIN_BYTES), it no longer copies the
# base; the rule still bounds what a cold open reads.
COMPACT_SCALE_BYTES = 256 << 10
COMPACT_MIN_BYTES = 256 << 10
LOG_SUFFIX = "-wal"
# Beside a base a compaction published: the base it replaced and the pages where they differ
# (`compaction.record_changes`), so the next compaction can reuse the replaced base.
CHANGES_SUFFIX = "-changes"
# A retired base at least this large is kept past the grace period, until the next compaction
# reuses it (`compaction`): copying a smaller one whole costs little.
REUSE_MIN_BYTES = 1 << 20
STALE_TEMP_SECONDS = 3600.0
CURRENT = "CURRENT"
LOCK = ".writer.lock"

_MIND_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_GENERATION = re.compile(r"^gen-(\d{6,})\.sqlite$")


def root() -> Path:
    return Path(get_settings().index_dir)


def is_mind_folder_name(name: str) -> bool:
    return bool(_MIND_ID.match(name))


def is_generation_name(name: str) -> bool:
    return bool(_GENERATION.match(name))


def mind_dir(mind_id: str, base: Path | None = None) -> Path:
    """The mind's folder; the id is checked so a record can never address a path outside the root."""
    if not is_mind_folder_name(mind_id):
        raise Unindexable(f"unsafe mind id {mind_id!r}")
    return (base or root()) / mind_id


def pointer_text(folder: Path) -> str:
    """CURRENT's text: the base generation's name, and how many batches its log holds."""
    try:
        return (folder / CURRENT).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""


def base_name(pointer: str) -> str:
    """The base generation's file name in CURRENT's text ("" if it names none)."""
    name = pointer.split(" ", 1)[0]
    return name if is_generation_name(name) else ""


def current_generation(folder: Path) -> Path | None:
    """The current base generation (its log holds the batches published since)."""
    name = base_name(pointer_text(folder))
    return folder / name if name else None


def log_of(generation: Path) -> Path:
    return generation.with_name(generation.name + LOG_SUFFIX)


def changes_of(generation: Path) -> Path:
    return generation.with_name(generation.name + CHANGES_SUFFIX)


def page_size(generation: Path) -> int:
    """A database's page size, from its header."""
    with open(generation, "rb") as handle:
        handle.seek(16)
        size = int.from_bytes(handle.read(2), "big")
    return 65536 if size == 1 else size


def _generation_number(path: Path | None) -> int:
    found = _GENERATION.match(path.name) if path else None
    return int(found.group(1)) if found else 0


def read_only_uri(path: Path) -> str:
    """`unix-none`: no locks, so nothing over NFS; see `configure` for the rest."""
    return f"file:{quote(str(path))}?mode=ro&vfs=unix-none"


def configure(db: sqlite3.Connection) -> sqlite3.Connection:
    """Settings every connection to a generation needs, set before it touches one.

    No checkpoint on close: the base must never change, and SQLite would otherwise checkpoint (a
    writer) or even delete the log (a read-only reader) when the last connection closes. Exclusive
    locking mode, set before the first access: the log's index lives in private memory, never in a
    `-shm` file shared over NFS.
    """
    db.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
    db.execute("PRAGMA locking_mode = EXCLUSIVE")
    return db


def open_read_only(path: Path) -> sqlite3.Connection:
    """A published generation as of now: its base and the log's committed transactions."""
    db = sqlite3.connect(read_only_uri(path), uri=True, check_same_thread=False)
    return configure(db)


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """One writer per mind at a time: concurrent indexer invocations and a rebuild take turns.

    The folder is created only when the lock file cannot be opened: on EFS every call is a round trip.
    """
    try:
        handle = open(folder / LOCK, "a+")  # noqa: SIM115 - closed below, after the unlock
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK, "a+")  # noqa: SIM115
    with handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


def temp_path(folder: Path) -> Path:
    """A fresh name for a generation being built; `collect_garbage` removes it if its writer crashed."""
    return folder / f"tmp-{uuid.uuid4().hex}.sqlite"


def open_build(path: Path) -> sqlite3.Connection:
    """Open a temp file no reader ever opens, for writing.

    A crash just leaves garbage that cleanup removes, so the journal lives in memory and durability
    comes from one fsync before publishing.
    """
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = MEMORY")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA temp_store = MEMORY")
    return db


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_append(generation: Path) -> sqlite3.Connection:
    """The current base, opened to append a batch to its log. Caller holds the writer lock.

    Through `unix-none`, like the readers: the writer lock is what keeps writers apart, so SQLite's
    own file locks (7 fcntl calls per batch, each a round trip on EFS) would guard nothing more.
    """
    uri = f"file:{quote(str(generation))}?vfs=unix-none"
    db = configure(sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False))
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("PRAGMA synchronous = OFF")  # one fsync of the log before CURRENT moves
    db.execute("PRAGMA temp_store = MEMORY")  # each change's savepoint journal
    return db


HEADER_BYTES = 100


def read_header(generation: Path) -> bytes | None:
    """The database header of a generation (None if the file is gone): one open tells whether it
    exists, whether it is in log mode, and its size."""
    try:
        with open(generation, "rb") as handle:
            return handle.read(HEADER_BYTES)
    except FileNotFoundError:
        return None


def header_is_log_mode(header: bytes) -> bool:
    return len(header) >= 20 and header[18:20] == b"\x02\x02"


def header_size(header: bytes) -> int | None:
    """The database's size in bytes from its header (a base never changes once published), or None
    when the header's page count is not known to be valid (written by a SQLite before 3.7)."""
    if len(header) < HEADER_BYTES or header[92:96] != header[24:28]:
        return None
    page_size = int.from_bytes(header[16:18], "big")
    return (65536 if page_size == 1 else page_size) * int.from_bytes(header[28:32], "big")


def is_log_mode(generation: Path) -> bool:
    """Whether the file is a WAL-mode database (bases built before logs were used are not)."""
    with open(generation, "rb") as handle:
        header = handle.read(20)
    return header_is_log_mode(header)


def log_bytes(generation: Path) -> int:
    try:
        return log_of(generation).stat().st_size
    except FileNotFoundError:
        return 0


def _swap_pointer(folder: Path, text: str) -> None:
    """Write the new text beside CURRENT, fsync it through the same descriptor, rename it over
    CURRENT, fsync the folder (so the rename survives a crash)."""
    pointer = folder / f"{CURRENT}.{uuid.uuid4().hex}.tmp"
    fd = os.open(pointer, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(pointer, folder / CURRENT)
    with contextlib.suppress(OSError):
        _fsync(folder)


def publish_log(folder: Path, generation: Path, pointer: str | None = None) -> str:
    """Publish what the log of the current base now holds. Caller holds the lock.

    CURRENT becomes "<base name> <n>", n counting the batches appended to this base: a new text on
    every publish, which is how a reader knows to open the generation again. `pointer` is CURRENT's
    text as the caller read it under the lock (read again if not given).
    """
    _fsync(log_of(generation))
    name, _, count = (pointer_text(folder) if pointer is None else pointer).partition(" ")
    appended = int(count) + 1 if name == generation.name and count.isdigit() else 1
    text = f"{generation.name} {appended}"
    _swap_pointer(folder, text)
    return text


def compaction_threshold(base_size: int) -> float:
    """The log size past which a base of `base_size` bytes is compacted (see COMPACT_SCALE_BYTES)."""
    return max(COMPACT_MIN_BYTES, math.sqrt(COMPACT_SCALE_BYTES * base_size))


def _to_log_mode(built: Path) -> None:
    db = sqlite3.connect(built, isolation_level=None)
    try:
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        db.execute("PRAGMA journal_mode = WAL")
    finally:
        db.close()


def publish(folder: Path, built: Path) -> Path:
    """Make `built` the next base generation: rename it, then swap CURRENT. Caller holds the lock."""
    _to_log_mode(built)
    _fsync(built)
    previous = current_generation(folder)
    target = folder / f"gen-{_generation_number(previous) + 1:06d}.sqlite"
    # Its (empty) log exists before anyone can open it: a reader, on a read-only mount, cannot create it.
    log_of(built).touch()
    os.replace(log_of(built), log_of(target))
    os.replace(built, target)
    _swap_pointer(folder, target.name)
    if previous is not None and previous.exists():
        # Its mtime now says when it was retired: the grace period runs from here.
        os.utime(previous)
    collect_garbage(folder)
    return target


def _companion_base(path: Path) -> Path | None:
    """The base a log or a change list belongs to (None: not one)."""
    for suffix in (LOG_SUFFIX, CHANGES_SUFFIX):
        if path.name.endswith(suffix) and is_generation_name(path.name.removesuffix(suffix)):
            return path.with_name(path.name.removesuffix(suffix))
    return None


def _kept_retired(bases: list[Path], keep: Path | None) -> Path | None:
    """The newest retired base, if large enough for the next compaction to reuse (`compaction`)."""
    retired = [base for base in bases if base != keep and _generation_number(base) < _generation_number(keep)]
    newest = max(retired, key=_generation_number, default=None)
    with contextlib.suppress(FileNotFoundError):
        if newest is not None and newest.stat().st_size >= REUSE_MIN_BYTES:
            return newest
    return None


def collect_garbage(folder: Path, now: float | None = None) -> list[Path]:
    """Delete generations retired longer than the grace period ago (but the newest, kept for the
    next compaction to reuse), with their logs and change lists, and temp files of crashed writers."""
    moment = time.time() if now is None else now
    keep = current_generation(folder)
    paths = sorted(folder.iterdir(), key=lambda p: _companion_base(p) is not None)  # bases first
    reusable = _kept_retired([p for p in paths if is_generation_name(p.name)], keep)
    removed = []
    for path in paths:
        try:
            age = moment - path.stat().st_mtime
        except FileNotFoundError:
            continue
        base = _companion_base(path)
        if base is not None:  # a log or change list goes with its base (deleted above, or not)
            stale_generation = base != keep and not base.exists()
        else:
            stale_generation = (
                is_generation_name(path.name) and path not in (keep, reusable) and age > GRACE_SECONDS
            )
        stale_temp = path.name.startswith(("tmp-", f"{CURRENT}.")) and age > STALE_TEMP_SECONDS
        if stale_generation or stale_temp:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
