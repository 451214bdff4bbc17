"""Back a mind up into a file, check such a file, and restore it into a new or empty mind: the
whole state, exactly (docs/backup.md). Not `transfer` (export/import), which moves memories as
new writes.

`backup` follows the backup's pages to the end. `check` verifies a file as the service does: lines
numbered from 1, each after the first carrying `prev`, the SHA-256 chain of the lines before it,
the trailer counting them; it names the first bad line. `restore` checks the file, then sends it in
chunks, each from the line the service asks for (`next_line`): a restore that stopped part-way goes
on where it stopped when run again, and one already done answers `done`.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple

from synapse_client import ops
from synapse_client.client import Synapse
from synapse_client.errors import SynapseError
from synapse_client.models import RestoreStatus

FORMAT, VERSION = "synapse-backup", 1
CHUNK_BYTES = 512 * 1024  # per restore request; the service takes up to 1 MiB
Progress = Callable[[int], None]
# What a restore writes into the mind, and what a backup only lists (their secrets are not in it;
# members stay those of the mind restored into): docs/backup.md.
RESTORED = ("memory", "revision", "deleted", "proposal", "mind")  # `mind`: its settings
LISTED = ("key", "hook", "webhook", "grant", "member")


class Outcome(NamedTuple):
    """A restore's counts split by what it did with each kind of line."""

    restored: dict[str, int]
    listed: dict[str, int]


def outcome(counts: dict[str, int]) -> Outcome:
    """`counts` (a `RestoreStatus`'s) as what was restored and what was only listed; a kind this
    client does not know counts as listed, so nothing is claimed restored that may not be."""
    restored = {kind: counts[kind] for kind in RESTORED if counts.get(kind)}
    order = [*LISTED, *sorted(set(counts) - set(LISTED))]
    listed = {kind: counts[kind] for kind in order if counts.get(kind) and kind not in RESTORED}
    return Outcome(restored, listed)


class BrokenBackup(ValueError):
    """A file that is not a whole, unchanged backup; `line` is the first line that is wrong."""

    def __init__(self, line: int, rule: str, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line, self.rule = line, rule


class Checked(NamedTuple):
    lines: int
    counts: dict[str, int]
    checksum: str
    header: dict[str, Any]


def backup(
    client: Synapse,
    out: IO[bytes],
    mind_id: str | None = None,
    progress: Progress | None = None,
    *,
    cursor: str | None = None,
    lines: int = 0,
    saved: Callable[[str, int], None] | None = None,
) -> int:
    """Write the mind's whole backup to `out`, page after page; returns how many lines. From
    `cursor` (with `lines` already written) it goes on where an earlier run stopped; `saved` is
    told each page's next cursor and the lines written, once they are in `out`."""
    while True:
        page = client.send(ops.backup_page(mind_id, cursor=cursor))
        out.write(page.lines)
        lines += page.lines.count(b"\n")
        if progress is not None:
            progress(lines)
        if page.next_cursor is None:
            return lines
        cursor = page.next_cursor
        if saved is not None:
            out.flush()
            saved(cursor, lines)


def _record(line: bytes, n: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError:
        raise BrokenBackup(n, "json", "is not a JSON object (cut short, or changed)") from None
    if not isinstance(record, dict):
        raise BrokenBackup(n, "json", "is not a JSON object")
    if record.get("n") != n:
        raise BrokenBackup(n, "sequence", f"is numbered {record.get('n')}: lines are missing or out of order")
    return record


def _header(record: dict[str, Any]) -> None:
    if record.get("kind") != "header" or record.get("format") != FORMAT:
        raise BrokenBackup(1, "format", f"is not a {FORMAT} header")
    if record.get("version") != VERSION:
        raise BrokenBackup(
            1, "version", f"is format version {record.get('version')}; this client reads {VERSION}"
        )


def check(lines: Iterable[bytes]) -> Checked:
    """Verify a whole backup (e.g. an open file's lines); `BrokenBackup` names the first bad line."""
    digest, n, ended = b"", 0, False
    counts: dict[str, int] = {}
    header: dict[str, Any] = {}
    for raw in lines:
        n += 1
        line = raw.rstrip(b"\n")
        if ended:
            raise BrokenBackup(n, "trailer", "comes after the trailer, which ends the backup")
        record = _record(line, n)
        if n == 1:
            _header(record)
            header = record
        elif record.get("prev") != digest.hex():
            raise BrokenBackup(n - 1, "checksum", f"does not match the checksum line {n} carries")
        if record.get("kind") == "end":
            stated = {k: v for k, v in (record.get("counts") or {}).items() if v}
            if record.get("lines") != n - 1 or stated != counts:
                raise BrokenBackup(
                    n, "count", f"counts {record.get('counts')}, but the backup holds {counts}"
                )
            ended = True
        elif n > 1:
            counts[str(record.get("kind"))] = counts.get(str(record.get("kind")), 0) + 1
        digest = hashlib.sha256(digest + line).digest()
    if not ended:
        raise BrokenBackup(n + 1, "truncated", f"the backup ends after line {n} without its trailer")
    return Checked(n, counts, digest.hex(), header)


def _numbered(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as file:
        for n, line in enumerate(file, 1):
            yield n, line.rstrip(b"\n")


def _filled(
    buffer: deque[tuple[int, bytes]], lines: Iterator[tuple[int, bytes]], start: int, size: int
) -> bool:
    """Lines from `start` into `buffer` up to `size` bytes (two lines at least); True at the file's end."""
    while buffer and buffer[0][0] < start:
        buffer.popleft()
    held = sum(len(line) + 1 for _, line in buffer)
    while held < size or len(buffer) < 2:
        found = next(lines, None)
        if found is None:
            return True
        if found[0] >= start:
            buffer.append(found)
            held += len(found[1]) + 1
    return False


def restore(
    client: Synapse,
    path: str | Path,
    mind_id: str | None = None,
    progress: Progress | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> RestoreStatus:
    """Check the backup at `path`, then restore it into the (new or empty) mind; run again after a
    failure, it goes on where the restore stands."""
    path = Path(path)
    with path.open("rb") as file:
        check(file)
    lines, buffer, start = _numbered(path), deque[tuple[int, bytes]](), 1
    while True:
        at_end = _filled(buffer, lines, start, chunk_bytes)
        body = b"".join(line + b"\n" for _, line in buffer)
        status = client.send(ops.restore_chunk(body, mind_id, last=at_end))
        if progress is not None:
            progress(status.next_line - 1)
        if status.status == "done":
            return status
        if status.next_line <= start and at_end and len(buffer) <= 1:
            raise SynapseError(f"The restore stands at line {status.next_line} and this file has no more.")
        if status.next_line < buffer[0][0]:  # behind what we hold: read the file again from its start
            lines, buffer = _numbered(path), deque()
        start = status.next_line
