"""The backup format (docs/backup.md): versioned JSON Lines, each line numbered and chained.

A backup is a stream of lines, each one JSON object with `n` (its number, from 1) and `kind`. Line
1 is the header (format name and version, the backup's id, its source, counts), the last is the
trailer (`kind: end`, how many lines came before it and how many of each kind). Every line after
the first carries `prev`, the hex digest of the stream so far:

    d_0 = b""        d_n = sha256(d_{n-1} || the bytes of line n, without its newline)

so line n+1 vouches for line n's exact bytes and, through the chain, every line before it; the
trailer's `prev` is the checksum of the whole stream. A reader checks it line by line, with no
more state than the last digest, and names the first line that does not fit (`Checker`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable
from typing import Any

from synapse.core import json_input
from synapse.core.errors import Unprocessable
from synapse.core.settings import get_settings

FORMAT = "synapse-backup"
VERSION = 1
CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
HEADER, MIND, END = "header", "mind", "end"
METADATA_KINDS = ("key", "hook", "webhook", "grant", "member")
DATA_KINDS = ("memory", "revision", "deleted", "proposal")
COUNTED_KINDS = (MIND, *METADATA_KINDS, *DATA_KINDS)  # what the trailer counts
KINDS = frozenset({HEADER, END, *COUNTED_KINDS})
HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
START = b""  # d_0
SEALED = b"synapse/backup/end\x00"  # what a trailer's seal says before the digest it ends


def chained(previous: bytes, line: bytes) -> bytes:
    """d_n from d_{n-1} and line n's bytes."""
    return hashlib.sha256(previous + line).digest()


def signing_key() -> bytes:
    """The deployment's key for backups, derived from its pepper (as cursors' is): only this
    deployment can sign a line, and a rotated pepper leaves older backups unsigned."""
    return hmac.new(get_settings().key_pepper, b"synapse/backup/v1", hashlib.sha256).digest()


def signature(key: bytes, previous: bytes) -> str:
    """A line's `sig`: the deployment's HMAC of d_(n-1), vouching for every line before it."""
    return hmac.new(key, previous, hashlib.sha256).hexdigest()


def seal(key: bytes, previous: bytes) -> str:
    """The trailer's `seal`: the deployment's HMAC of "the stream ends after d_(n-1)". A `sig` says
    the lines before it are the deployment's, not that nothing came after them, so it can be moved
    onto a forged trailer at any line; a seal is made only where the deployment ended the stream
    (its message is never a `sig`'s: SEALED then 32 bytes, against 32 bytes)."""
    return hmac.new(key, SEALED + previous, hashlib.sha256).hexdigest()


def encode(n: int, kind: str, previous: bytes, fields: dict[str, Any], key: bytes | None = None) -> bytes:
    """Line n of the stream (without its newline): `n`, `kind`, `prev` and, with `key`, `sig`
    (after line 1), then `fields`."""
    record: dict[str, Any] = {"n": n, "kind": kind}
    if n > 1:
        record["prev"] = previous.hex()
        if key is not None:
            record["sig"] = signature(key, previous)
            if kind == END:
                record["seal"] = seal(key, previous)
    record.update(fields)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def lines_of(data: bytes) -> list[bytes]:
    """The lines of a body or file piece: split on newlines, a final newline optional."""
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    return parts


# ---------------------------------------------------------------- refusing a stream


def problem(line: int, rule: str, message: str, field: str | None = None) -> dict[str, Any]:
    named = {"field": field} if field else {}
    return {"line": line, **named, "rule": rule, "message": message}


class Refused(Unprocessable):
    """A stream that is not a backup this server restores, naming the first line that is wrong
    (and, for a value a write would refuse, its field: `memory.tags[3]`)."""

    def __init__(self, line: int, rule: str, message: str, field: str | None = None) -> None:
        said = f"{field}: {message}" if field else message
        super().__init__(f"line {line}: {said}", details=[problem(line, rule, message, field)])
        self.line, self.rule = line, rule


def _lenient(line: bytes) -> Any:
    """The line as Python's own reader takes it (NaN, Infinity and 1e999 become floats), or None
    when it is not JSON at all. Only for naming the field: every value is then checked as a write
    checks it (`checks`), which refuses a number that is not finite and a lone surrogate."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def parse(line: bytes, expected: int) -> dict[str, Any]:
    """Line `expected` as a JSON object with the right `n` and a known `kind`."""
    try:
        record = json_input.read(line)  # as every door reads JSON: no NaN, 1e999 or lone surrogate
    except json_input.Unreadable as error:
        if error.rule != "json":
            raise Refused(expected, error.rule, error.message, error.field or None) from None
        record = _lenient(line)  # NaN or 1e999: read, so the line's checks name the field (rule number)
        if record is None:
            raise Refused(expected, "json", "is not a JSON object (cut short, or changed)") from None
    if not isinstance(record, dict):
        raise Refused(expected, "json", "is not a JSON object")
    n = record.get("n")
    if not isinstance(n, int) or isinstance(n, bool):
        raise Refused(expected, "sequence", "has no line number `n`")
    if n != expected:
        raise Refused(expected, "sequence", f"is numbered {n}: lines are missing, repeated or out of order")
    kind = record.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:  # an object or a list is no kind (nor hashable)
        raise Refused(expected, "kind", f"has an unknown kind {str(kind)[:40]!r}", "kind")
    return record


def check_header(record: dict[str, Any]) -> None:
    """Line 1 must be a header of this format and version."""
    if record.get("kind") != HEADER:
        raise Refused(1, "header", "is not the header: a backup starts with it")
    if record.get("format") != FORMAT:
        raise Refused(1, "format", f"is not a {FORMAT} header (format {str(record.get('format'))[:40]!r})")
    if record.get("version") != VERSION:
        shown = str(record.get("version"))[:20]
        raise Refused(1, "version", f"is format version {shown}; this server reads version {VERSION}")
    if not isinstance(record.get("backup_id"), str) or not isinstance(record.get("source"), dict):
        raise Refused(1, "header", "lacks the backup's id or its source")


def check_trailer(record: dict[str, Any], counts: dict[str, int]) -> None:
    """The trailer must count the lines and kinds that came before it."""
    n = int(record["n"])
    if record.get("lines") != n - 1:
        raise Refused(n, "count", f"counts {record.get('lines')} lines before it, but {n - 1} came")
    stated = record.get("counts")
    seen = {kind: count for kind, count in counts.items() if count}
    if not isinstance(stated, dict) or {k: v for k, v in stated.items() if v} != seen:
        raise Refused(n, "count", f"counts {stated}, but the stream holds {seen}")


class Checker:
    """Checks a stream line by line, from line `n` with the digest of the lines before it; with
    `key` (called once, on the first signed line), it also tells whether the deployment signed
    every line before the last one checked (`signed`) and, once the trailer is checked, whether the
    deployment ended the stream there (`sealed`): a file cut short and given a trailer is not."""

    def __init__(
        self,
        n: int = 1,
        digest: bytes = START,
        counts: dict[str, int] | None = None,
        key: Callable[[], bytes] | None = None,
    ) -> None:
        self.n, self.digest = n, digest
        self.counts: dict[str, int] = dict(counts or {})
        self.ended = False
        self.signed = False
        self.sealed = False
        self._key = key
        self._known: bytes | None = None

    def _signs(self, record: dict[str, Any], field: str = "sig") -> bool:
        """Whether the line's `sig` (or a trailer's `seal`) is this deployment's over the digest
        of the lines before it."""
        given = record.get(field)
        if self._key is None or not isinstance(given, str) or not given.isascii():
            return False
        if self._known is None:
            self._known = self._key()
        made = seal if field == "seal" else signature
        return hmac.compare_digest(given, made(self._known, self.digest))

    def check(self, line: bytes) -> dict[str, Any]:
        """The record of the next line, if it fits the stream so far; else `Refused` naming it."""
        if self.ended:
            raise Refused(self.n, "trailer", "comes after the trailer, which ends the stream")
        record = parse(line, self.n)
        if self.n == 1:
            check_header(record)
        elif record.get("prev") != self.digest.hex():
            raise Refused(
                self.n - 1,
                "checksum",
                f"does not match the checksum line {self.n} carries: changed, or a line is missing",
            )
        elif record["kind"] == HEADER:
            raise Refused(self.n, "header", "is a second header")
        self.signed = self.n > 1 and self._signs(record)
        kind = str(record["kind"])
        if kind == END:
            check_trailer(record, self.counts)
            self.ended = True
            self.sealed = self.signed and self._signs(record, "seal")
        elif kind != HEADER:
            self.counts[kind] = self.counts.get(kind, 0) + 1
        self.digest = chained(self.digest, line)
        self.n += 1
        return record

    def finish(self) -> None:
        """At the end of the stream: the trailer must have come."""
        if not self.ended:
            raise Refused(self.n, "truncated", f"the stream ends after line {self.n - 1} without its trailer")
