"""Vectors a broken model left behind, filled in later by the indexer itself (issue 40 item 4).

When the model cannot embed (a damaged or unreadable file), a batch is published with its lexical rows
and without those vectors: the generation records it (its `vectors_complete` is "0", and the memories
lacking a vector are those `vectors.fill` finds), and the mind gets a marker here,
`<index root>/.vectors-pending/<mind id>` (a folder name no mind id can have, so the folder sweeps
pass it by). Every later stream batch, of any mind, then fills in up to `MINDS_PER_BATCH` marked
minds once the model loads again (`fill_pending`), and the daily sweep of the rebuild function does
the same for what is left; a mind's marker goes once its generation holds every vector. No one has to
run `infra.rebuild`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from synapse.core.observability import logger
from synapse.search import generations

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


def fill_pending(
    base: Path | None = None, limit: int = MINDS_PER_BATCH, out_of_time: Callable[[], bool] = lambda: False
) -> int:
    """Fill in the vectors of up to `limit` marked minds (a publish of each: the writer's `fill`);
    returns how many vectors were written. Stops at the first mind the model still fails for."""
    from synapse.search.writer import Writer  # the writer imports this module

    written = 0
    for mind_id in pending(base, limit):
        if out_of_time():
            break
        if generations.current_generation(generations.mind_dir(mind_id, base)) is None:
            clear(mind_id, base)  # the mind's index is gone (the mind deleted): nothing to fill
            continue
        try:
            with Writer(mind_id, base) as writer:
                writer.publish()
        except Exception:  # the next batch, or the next sweep, tries again
            logger.exception("filling in deferred vectors failed", extra={"mind_id": mind_id})
            break
        written += writer.embedded
        if writer.vectors_deferred:
            break  # the model still fails: the marker stays
        if writer.vectors_complete:
            clear(mind_id, base)
    return written
