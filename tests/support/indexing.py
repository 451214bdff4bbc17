"""Index helpers only tests and the benchmark need: a batch applied in one go, and what a search sees."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from synapse.index.documents import Change
from synapse.index.writer import Writer


def apply_batch(mind_id: str, changes: Iterable[Change], base: Path | None = None) -> Path | None:
    """Apply a batch of one mind's changes and publish one generation (None if nothing changed)."""
    with Writer(mind_id, base) as writer:
        for change in changes:
            writer.apply(change)
        return writer.publish()


def copy_of(built: Path, into: Path) -> Path:
    """`into` holding a copy of the index folders under `built` (files written now, as a fresh build's
    are): a mind built once per session and copied for each test, rather than embedded again."""
    shutil.copytree(built, into, dirs_exist_ok=True, copy_function=shutil.copyfile)
    return into


class LiveRow(NamedTuple):
    """A live doc as indexed; the fts_* texts are folded, raw_* set only where folding changed them."""

    id: str
    version: int
    category: str
    key: str
    priority: str
    updated_at: str
    expires_at: str | None
    fts_key: str
    fts_content: str
    fts_tags: str
    raw_key: str | None
    raw_content: str | None
    raw_tags: str | None
    tags: str | None  # sorted, joined by ","


def live_rows(db: sqlite3.Connection) -> list[LiveRow]:
    """Everything a search can see, in a stable order: for comparing two indexes of the same mind."""
    rows = db.execute(
        "SELECT d.id, d.version, d.category, d.key, d.priority, d.updated_at, d.expires_at,"
        " f.key, f.content, f.tags, f.raw_key, f.raw_content, f.raw_tags,"
        " (SELECT group_concat(tag, ',')"
        "  FROM (SELECT tag FROM doc_tags t WHERE t.rowid = d.rowid ORDER BY tag))"
        " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0 ORDER BY d.id"
    )
    return list(map(LiveRow._make, rows))
