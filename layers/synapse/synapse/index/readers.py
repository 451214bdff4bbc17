"""Readers: each mind's current generation, opened read-only once and kept while CURRENT names it."""

import functools
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from synapse.core.settings import get_settings
from synapse.index import generations

# Open generations kept per thread, least recently used closed first: one search container serves
# every mind, and each connection holds a file descriptor and a page cache.
MAX_OPEN_READERS = 32
# And what they derived (vector matrices: ~15 MB per 10,000 memories as float32) is bounded in bytes
# too, per thread, by settings.index_cache_bytes: past it the least recently used readers close, the
# one in use always stays (a mind larger than the budget is still searched, just not kept beside others).


class _Open(NamedTuple):
    generation: str  # CURRENT's text when it was opened (base name and batch count)
    connection: sqlite3.Connection
    derived: dict[str, Any]  # what was computed from this generation (its vector matrix), by name
    # What was computed from the previous generation of the same base (batches appended since),
    # for `derived` to bring up to date rather than compute whole.
    earlier: dict[str, Any]


def _derived_bytes(opened: _Open) -> int:
    return sum(int(getattr(value, "nbytes", 0)) for value in opened.derived.values())


class _Readers(threading.local):
    def __init__(self) -> None:
        # CURRENT's path → its open generation, oldest use first
        self.open: OrderedDict[str, _Open] = OrderedDict()


_readers = _Readers()


def open_generation(path: Path) -> sqlite3.Connection:
    """Open a published generation read-only: its base and the batches its log holds now."""
    return generations.open_read_only(path)


def _named_generation(pointer: str) -> str:
    """CURRENT's content, read with bare system calls (this runs on every search)."""
    try:
        fd = os.open(pointer, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    try:
        return os.read(fd, 256).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=1024)
def _pointer(mind_id: str, base: Path | None, index_dir: str) -> str:
    """The path of a mind's CURRENT (the mind id checked once, not on every search)."""
    folder = generations.mind_dir(mind_id, base or Path(index_dir))
    return os.path.join(folder, generations.CURRENT)


def reader(mind_id: str, base: Path | None = None) -> sqlite3.Connection | None:
    """The mind's current generation, opened once and reused while CURRENT still names it.

    CURRENT is read on every call (an open() revalidates it over NFS, where a stat could be served
    stale from the attribute cache). None when the mind has no index yet, or it went with its mind.
    """
    pointer = _pointer(mind_id, base, get_settings().index_dir)
    cached = _readers.open.get(pointer)
    name = _named_generation(pointer)
    if cached is not None and cached.generation == name:
        _readers.open.move_to_end(pointer)
        return cached.connection
    earlier: dict[str, Any] = {}
    generation = generations.base_name(name)
    if cached is not None:
        cached.connection.close()
        del _readers.open[pointer]
        if generation and generations.base_name(cached.generation) == generation:
            earlier = cached.derived or cached.earlier
    if not generation:
        return None
    try:
        connection = open_generation(Path(pointer).parent / generation)
        connection.execute("SELECT 1 FROM meta LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    _readers.open[pointer] = _Open(name, connection, {}, earlier)
    _evict(lambda: len(_readers.open) > MAX_OPEN_READERS)
    return connection


def _evict(over: Callable[[], bool]) -> None:
    """Close the least recently used readers while `over()`; never the one in use (the last)."""
    while len(_readers.open) > 1 and over():
        _, evicted = _readers.open.popitem(last=False)
        evicted.connection.close()


def cached_bytes() -> int:
    """What this thread's open readers derived, in bytes (bounded by settings.index_cache_bytes)."""
    return sum(_derived_bytes(opened) for opened in _readers.open.values())


_MISSING = object()


def derived(
    db: sqlite3.Connection,
    name: str,
    compute: Callable[[sqlite3.Connection], Any],
    update: Callable[[Any, sqlite3.Connection], Any] | None = None,
) -> Any:
    """`compute(db)`, once per opened generation (as long as the reader keeps it open): the vector
    matrix is loaded once, not on every search. Where the reader had the previous generation of the
    same base, `update(what it computed there, db)` instead (it reads only what changed). A
    connection that is not a cached reader's computes every time."""
    for pointer, opened in _readers.open.items():
        if opened.connection is db:
            found = opened.derived.get(name, _MISSING)
            if found is _MISSING:
                before = opened.earlier.get(name, _MISSING)
                updating = update is not None and before is not _MISSING
                found = update(before, db) if update is not None and updating else compute(db)
                opened.derived[name] = found
                opened.earlier.clear()
                _readers.open.move_to_end(pointer)  # in use: the last to go
                _evict_past(get_settings().index_cache_bytes)
            return found
    return compute(db)


def _evict_past(budget: int) -> None:
    _evict(lambda: cached_bytes() > budget)
