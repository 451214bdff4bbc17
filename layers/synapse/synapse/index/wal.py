"""Reading a SQLite write-ahead log as SQLite itself recovers it (https://sqlite.org/fileformat.html,
"The Write-Ahead Log"), so a compaction can write a log's pages into a base without copying the log
beside it first: the frames of the last valid commit, each page's last version.

A header of 32 bytes (magic, version, page size, checkpoint sequence, two salts, a checksum), then
frames: 24 bytes (page number, the database's size in pages for a commit frame else 0, the two salts,
a running checksum over the header and every frame so far) and the page. A frame counts while its
salts are the header's and its checksum holds; the log's content is every frame up to the last such
commit frame (a torn or stale tail after it is not part of the database).
"""

import struct
from pathlib import Path
from typing import NamedTuple

_MAGIC_LITTLE = 0x377F0682  # checksums over little-endian words
_MAGIC_BIG = 0x377F0683
HEADER = 32
FRAME_HEADER = 24


class Log(NamedTuple):
    """A log's committed content: each page's last committed version (where it lies in the log
    file) and the database's size in pages after the last commit."""

    page_size: int
    pages: dict[int, int]  # page number → offset of its last committed image in the log file
    database_pages: int


def _checksum(data: bytes, words: str, s0: int, s1: int) -> tuple[int, int]:
    values = struct.unpack(f"{words}{len(data) // 4}I", data)
    for at in range(0, len(values), 2):
        s0 = (s0 + values[at] + s1) & 0xFFFFFFFF
        s1 = (s1 + values[at + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def read_log(path: Path) -> Log | None:
    """The committed content of the log at `path` (None: no log, or none SQLite would read)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < HEADER:
        return None
    magic, _, page_size, _, salt1, salt2, check1, check2 = struct.unpack(">8I", data[:HEADER])
    if magic not in (_MAGIC_LITTLE, _MAGIC_BIG) or page_size & (page_size - 1) or page_size < 512:
        return None
    words = "<" if magic == _MAGIC_LITTLE else ">"
    s0, s1 = _checksum(data[:24], words, 0, 0)
    if (s0, s1) != (check1, check2):
        return None
    pending: dict[int, int] = {}
    committed: dict[int, int] = {}
    size = 0
    frame = FRAME_HEADER + page_size
    for at in range(HEADER, len(data) - frame + 1, frame):
        number, commit, f_salt1, f_salt2, f_check1, f_check2 = struct.unpack(">6I", data[at : at + 24])
        if (f_salt1, f_salt2) != (salt1, salt2) or number == 0:
            break
        s0, s1 = _checksum(data[at : at + 8], words, s0, s1)
        s0, s1 = _checksum(data[at + FRAME_HEADER : at + frame], words, s0, s1)
        if (s0, s1) != (f_check1, f_check2):
            break
        pending[number] = at + FRAME_HEADER
        if commit:
            committed.update(pending)
            pending.clear()
            size = commit
    if not committed:
        return None
    return Log(page_size, committed, size)


def page_numbers(path: Path) -> set[int]:
    """The pages a log's committed frames write: where its database differs from its base once
    the log is checkpointed."""
    log = read_log(path)
    return set(log.pages) if log is not None else set()
