"""The per-mind index on disk: SQLite FTS5 snapshot files, written by one writer, read by many.

Layout under the index root (EFS in AWS, a local folder otherwise):

    <root>/<mind id>/gen-000042.sqlite   published generations; never modified once published
    <root>/<mind id>/CURRENT             the name of the current generation (swapped with os.replace)
    <root>/<mind id>/tmp-*.sqlite        a generation being built (never opened by readers)
    <root>/<mind id>/.writer.lock        held by whoever builds the next generation

A writer builds the next generation in a temp file and publishes it by renaming it and swapping
CURRENT. Readers open the generation CURRENT names with `mode=ro&immutable=1` (no locks, no WAL,
nothing SQLite must coordinate over NFS). A superseded generation stays on disk for a grace period,
so a reader that opened it a moment ago still gets consistent answers, then is deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from synapse.core.settings import get_settings
from synapse.search.documents import Unindexable

GRACE_SECONDS = 300.0
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


def current_generation(folder: Path) -> Path | None:
    try:
        name = (folder / CURRENT).read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return folder / name if is_generation_name(name) else None


def _generation_number(path: Path | None) -> int:
    found = _GENERATION.match(path.name) if path else None
    return int(found.group(1)) if found else 0


def read_only_uri(path: Path) -> str:
    """`immutable` because a published generation never changes: SQLite takes no locks on it."""
    return f"file:{quote(str(path))}?mode=ro&immutable=1"


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """One writer per mind at a time: concurrent indexer invocations and a rebuild take turns."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a+") as handle:
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
    return db


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(folder: Path, built: Path) -> Path:
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
    collect_garbage(folder)
    return target


def collect_garbage(folder: Path, now: float | None = None) -> list[Path]:
    """Delete generations retired longer than the grace period ago, and temp files of crashed writers."""
    moment = time.time() if now is None else now
    keep = current_generation(folder)
    removed = []
    for path in folder.iterdir():
        age = moment - path.stat().st_mtime
        stale_generation = is_generation_name(path.name) and path != keep and age > GRACE_SECONDS
        stale_temp = path.name.startswith(("tmp-", f"{CURRENT}.")) and age > STALE_TEMP_SECONDS
        if stale_generation or stale_temp:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
