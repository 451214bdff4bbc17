"""Folding a mind's log into a new base without writing the whole base again.

A compaction used to copy the base (150 MB at 100,000 memories) to check the log into the copy: at
issue 23's threshold that was ~24 times the log's own bytes per change (docs/scaling.md). A base
never changes while readers may read it, so the previous base, retired at the last compaction, differs from
the current one only in the pages that compaction wrote: its log's committed pages, the pages
`tidy` rewrote, and page 1. Each compaction records those pages beside the base it publishes
(`<base>-changes`: the retired base's name, then the page numbers). The next one, once no reader can
still be reading the retired base (retired longer than `generations.GRACE_SECONDS` ago), renames it
to a temp file, copies in those pages from the current base (now a byte-for-byte copy of it), and
writes the current log's committed pages over them (`wal.read_log`): what it writes grows with the
changes, not with the mind. Without a retired base to reuse (a new mind, a rebuild, a small mind,
the first compaction after an upgrade), it copies the base as before.

A crash halfway leaves a temp file that garbage collection removes; the next compaction copies.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from synapse.index import generations, wal

# A compaction due while the base it could reuse is still in its grace period waits for it, until
# the log passes this many times its threshold (then the base is copied, as before).
WAIT_FACTOR = 4.0


def due(generation: Path, base_size: int | None = None, now: float | None = None) -> bool:
    """Whether to compact now: the log is past its threshold and not waiting for a base to reuse
    (`base_size`: the base's size if known, saving a stat)."""
    size = generations.log_bytes(generation)
    if size <= generations.COMPACT_MIN_BYTES:
        return False
    base = generation.stat().st_size if base_size is None else base_size
    threshold = generations.compaction_threshold(base)
    if size <= threshold:
        return False
    if size > WAIT_FACTOR * threshold:
        return True
    donor = _donor(generation)
    return donor is None or _retired_long_enough(donor[0], now)


def compact_into(
    generation: Path, temp: Path, tidy: Callable[[sqlite3.Connection], None] | None = None
) -> set[int]:
    """Write base + log as one database at `temp` (a new base, in WAL mode), reusing the retired
    base where it can; `tidy` then drops what only readers of the old base needed. Returns the
    pages where `temp` differs from `generation` (for `record_changes`)."""
    donor = _donor(generation)
    if donor is not None and _retired_long_enough(donor[0]):
        os.replace(donor[0], temp)
        for leftover in (generations.log_of(donor[0]), generations.changes_of(donor[0])):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        _copy_pages(generation, temp, donor[1] | {1})
    else:
        shutil.copyfile(generation, temp)
    changed = {1}
    log = wal.read_log(generations.log_of(generation))
    if log is not None:
        _write_log(generations.log_of(generation), log, temp)
        changed |= set(log.pages)
    if tidy is not None:
        changed |= _tidy(temp, tidy)
    return changed


def record_changes(published: Path, retired: Path, pages: Iterable[int]) -> None:
    """Beside a newly published base: the base it replaced and the pages where they differ."""
    numbers = sorted(pages)
    name = retired.name.encode()
    body = struct.pack(f">H{len(name)}s{len(numbers)}I", len(name), name, *numbers)
    temp = generations.temp_path(published.parent).with_suffix(".changes")
    temp.write_bytes(body)
    os.replace(temp, generations.changes_of(published))


def _donor(generation: Path) -> tuple[Path, set[int]] | None:
    """The retired base this one's recorded changes are counted from, and those pages, if both
    are still on disk and the base is worth reusing."""
    try:
        body = generations.changes_of(generation).read_bytes()
        (length,) = struct.unpack(">H", body[:2])
        name = body[2 : 2 + length].decode()
        pages = set(struct.unpack(f">{(len(body) - 2 - length) // 4}I", body[2 + length :]))
    except (FileNotFoundError, struct.error, UnicodeDecodeError):
        return None
    retired = generation.with_name(name)
    if not generations.is_generation_name(name) or not retired.exists():
        return None
    if generation.stat().st_size < generations.REUSE_MIN_BYTES:  # copied whole: cheap
        return None
    return retired, pages


def _retired_long_enough(retired: Path, now: float | None = None) -> bool:
    """Past the grace period: no reader still reads it (its mtime says when it was retired)."""
    moment = time.time() if now is None else now
    try:
        return moment - retired.stat().st_mtime > generations.GRACE_SECONDS
    except FileNotFoundError:
        return False


def _copy_pages(source: Path, target: Path, pages: set[int]) -> None:
    """Make `target` a copy of `source` where they differ only in `pages`: those pages copied, the
    size matched."""
    page_size = generations.page_size(source)
    size = source.stat().st_size
    with open(source, "rb") as reading, open(target, "r+b") as writing:
        for number in sorted(pages):
            at = (number - 1) * page_size
            if at < size:
                writing.seek(at)
                writing.write(os.pread(reading.fileno(), page_size, at))
        writing.truncate(size)


def _write_log(path: Path, log: wal.Log, target: Path) -> None:
    """Each page's last committed image from the log at `path` written into `target`, whose size
    becomes the database's after the last commit: what SQLite's checkpoint writes."""
    with open(path, "rb") as reading, open(target, "r+b") as writing:
        for number, at in sorted(log.pages.items()):
            writing.seek((number - 1) * log.page_size)
            writing.write(os.pread(reading.fileno(), log.page_size, at))
        writing.truncate(log.database_pages * log.page_size)


def _tidy(temp: Path, tidy: Callable[[sqlite3.Connection], None]) -> set[int]:
    """Run `tidy` on the new base; the pages it wrote (read from its log before the close checks
    them in)."""
    db = sqlite3.connect(temp, isolation_level=None)
    try:
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        tidy(db)
        written = wal.page_numbers(generations.log_of(temp))
    finally:
        db.close()  # the last connection: checkpoints the log and deletes it
    with contextlib.suppress(FileNotFoundError):
        generations.log_of(temp).unlink()
    return written
