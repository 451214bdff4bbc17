"""Vectors a broken model left behind, filled in later by the indexer itself (issue 40 item 4).

When the model cannot embed (a damaged or unreadable file), a batch is published with its lexical rows
and without those vectors: the generation records it (its `vectors_complete` is "0", and the memories
lacking a vector are those `vectors.fill` finds), and the mind gets a marker here,
`<index root>/.vectors-pending/<mind id>` (a folder name no mind id can have, so the folder sweeps
pass it by). Every later stream batch, of any mind, then fills in up to `MINDS_PER_BATCH` marked
minds once the model loads again (`stream.fill_pending`), and the daily sweep of the rebuild function does
the same for what is left; a mind's marker goes once its generation holds every vector. No one has to
run `infra.rebuild`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from synapse.index import generations

PENDING_DIR = ".vectors-pending"
# Marked minds a stream batch fills in after its own (at most `vectors.FILL_PER_BATCH` vectors each,
# ~2.5 s of CPU): a batch pays little while a model comes back; the daily sweep takes more, in its time.
MINDS_PER_BATCH = 1
MINDS_PER_SWEEP = 10_000


def _folder(base: Path | None) -> Path:
    return (base or generations.root()) / PENDING_DIR


def note(mind_id: str, base: Path | None = None) -> None:
    """Mark the mind as having memories without vectors (after its generation recorded them)."""
    folder = _folder(base)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / mind_id).touch()


def clear(mind_id: str, base: Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        (_folder(base) / mind_id).unlink()


def pending(base: Path | None = None, limit: int = MINDS_PER_BATCH) -> list[str]:
    """Up to `limit` marked minds (any order: each is filled and unmarked in turn)."""
    try:
        with os.scandir(_folder(base)) as entries:
            names = []
            for entry in entries:
                if generations.is_mind_folder_name(entry.name):
                    names.append(entry.name)
                    if len(names) == limit:
                        break
            return names
    except FileNotFoundError:
        return []
