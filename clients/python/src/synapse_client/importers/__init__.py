"""Importers: memories from the tools people leave, as records `synapse import` stores.

Each module is a pure function from a file (or a folder) to an `Imported`: records in the shape of
an export line (category, key, content, tags, priority, expires_at) and the warnings of what had to
change. Nothing here talks to a server. The records carry no `source` or `verified`: what another tool
remembered is an agent's, unverified, until a person vouches for it (`synapse import --verify`).

The rules every importer shares, so a record never fails the server's checks (SPEC §1):
- `text_of`: a lone UTF-16 surrogate (a broken "\\ud800" escape in the file) becomes U+FFFD, with a
  warning (the server refuses text that has no UTF-8 form);
- `key_of`: lowercase snake_case, at most 128 characters, derived only from the tool's own stable id
  or name, so importing the same file again replaces instead of duplicating; a short hash of the
  original is appended when folding lost something (case aside), so two names never meet by accident;
- `clean_tags`: trimmed, lowercased, de-duplicated, 1-64 characters, at most 20 (the rest dropped,
  with a warning);
- `fit`: content over 32 KiB of UTF-8 is split into parts (`key`, `key_part_2`, …), with a warning;
  empty content is skipped, with a warning.
docs/importing.md has each tool's mapping and what is lost.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY_MAX = 128
CONTENT_MAX_BYTES = 32 * 1024
TAGS_MAX = 20
TAG_MAX_CHARS = 64
CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
_NOT_KEY = re.compile(r"[^a-z0-9]+")
_PART = "_part_"


@dataclass
class Imported:
    """What an importer read: the records to store, and what it had to change or leave out."""

    records: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(
        self,
        where: str,
        *,
        category: str,
        key: str,
        content: str,
        tags: Iterable[str] = (),
        priority: str = "normal",
        expires_at: str | None = None,
        occurred_at: str | None = None,
    ) -> None:
        """One memory, made to fit: text made text, tags cleaned, content split past the limit, empty
        ones skipped."""
        where = _repaired(where)  # it may quote the file, and it is printed
        content = text_of(content, where, self.warnings)
        tags = [text_of(str(tag), where, self.warnings) for tag in tags]
        if not content.strip():
            self.warnings.append(f"{where}: empty content, skipped")
            return
        kept = clean_tags(tags, where, self.warnings)
        parts = fit(content)
        if len(parts) > 1:
            size = len(content.encode("utf-8"))
            self.warnings.append(
                f"{where}: {size:,} bytes is over the 32 KiB limit: split into {len(parts)} memories "
                f"({key}, {part_key(key, 2)}, …)"
            )
        for number, part in enumerate(parts, 1):
            record: dict[str, Any] = {
                "category": category,
                "key": part_key(key, number),
                "content": part,
                "priority": priority,
            }
            if kept:
                record["tags"] = kept
            if expires_at:
                record["expires_at"] = expires_at
            if occurred_at:
                record["occurred_at"] = occurred_at
            self.records.append(record)


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def text_of(value: str, where: str, warnings: list[str]) -> str:
    """`value` with each lone UTF-16 surrogate (a JSON escape like "\\ud800" without its pair) replaced
    by U+FFFD, with a warning: such a string has no UTF-8 form, and the server refuses it."""
    repaired = _repaired(value)
    if repaired != value:
        warnings.append(f"{where}: a lone UTF-16 surrogate (not text) replaced by U+FFFD")
    return repaired


def _repaired(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # through UTF-16: a split pair is one character again, a lone half U+FFFD
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value


def key_of(name: str, prefix: str = "", room: int = len(_PART) + 3) -> str:
    """A SPEC key for `name`, the same for the same name: folded to ASCII snake_case, with a hash of
    the name appended when folding dropped anything but case, spaces and dashes (accents, symbols,
    length). `room` keeps space for a `_part_N` suffix."""
    ascii_form = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    folded = _NOT_KEY.sub("_", ascii_form.lower()).strip("_")
    plain = re.sub(r"[\s\-_]+", "_", name.strip().lower()).strip("_")
    base = f"{prefix}_{folded}" if prefix and folded else (prefix or folded)
    limit = KEY_MAX - room
    if folded == plain and len(base) <= limit and base:
        return base
    suffix = short_hash(name)
    return f"{base[: limit - len(suffix) - 1].rstrip('_')}_{suffix}" if base else f"h_{suffix}"


def part_key(key: str, number: int) -> str:
    return key if number == 1 else f"{key}{_PART}{number}"


def clean_tags(tags: Iterable[str], where: str, warnings: list[str]) -> list[str]:
    """Tags as the server keeps them (trimmed, lowercased, de-duplicated, order kept), the ones it
    would refuse left out with a warning: empty, over 64 characters, past the 20th."""
    kept: list[str] = []
    for raw in tags:
        tag = str(raw).strip().lower()
        if not tag:
            continue
        if len(tag) > TAG_MAX_CHARS:
            warnings.append(f"{where}: tag {tag[:20]!r}… is over {TAG_MAX_CHARS} characters, dropped")
            continue
        if tag not in kept:
            kept.append(tag)
    if len(kept) > TAGS_MAX:
        warnings.append(f"{where}: {len(kept)} tags, over {TAGS_MAX}: kept the first {TAGS_MAX}")
        kept = kept[:TAGS_MAX]
    return kept


def fit(content: str, limit: int = CONTENT_MAX_BYTES) -> list[str]:
    """`content` in parts of at most `limit` bytes of UTF-8, cut at a line end where one is near
    (never inside a character)."""
    parts: list[str] = []
    rest = content
    while len(rest.encode("utf-8")) > limit:
        head = rest.encode("utf-8")[:limit].decode("utf-8", "ignore")
        cut = head.rfind("\n")
        if cut < len(head) // 2:  # no line end in the second half: cut at the byte limit
            cut = len(head)
        parts.append(head[:cut])
        rest = rest[cut:].lstrip("\n")
    if rest.strip() or not parts:
        parts.append(rest)
    return parts


def category_of(name: str | None, table: dict[str, str], default: str) -> str:
    """A tool's category or type name among SPEC's eight (`table` maps the tool's own names)."""
    if not name:
        return default
    folded = name.strip().lower()
    if folded in CATEGORIES:
        return folded
    return table.get(folded, default)


Reader = Callable[[Path], Imported]


def readers() -> dict[str, Reader]:
    """`--from` name → its reader (imported here, late, so each module stays a leaf)."""
    from synapse_client.importers import basic_memory, mcp_memory, mem0

    return {"mem0": mem0.read, "mcp-memory": mcp_memory.read, "basic-memory": basic_memory.read}


FORMATS = ("mem0", "mcp-memory", "basic-memory")


def read(format_name: str, path: Path) -> Imported:
    """The records of `path` in the named tool's format; ValueError when it is not in that format."""
    return readers()[format_name](path)
