"""Indexes of minds that no longer exist: deleting a mind deletes its index files."""

from __future__ import annotations

import shutil
from pathlib import Path

from synapse.search import generations
from synapse.storage import tables


def mind_exists(mind_id: str) -> bool:
    return tables.get(tables.minds_table(), tables.mind_key(mind_id)) is not None


def remove_mind(mind_id: str, base: Path | None = None) -> bool:
    """Delete every file of a mind's index (the mind is gone). Returns whether anything was there."""
    folder = generations.mind_dir(mind_id, base)
    if not folder.exists():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def remove_after_writer(mind_id: str, base: Path | None = None) -> None:
    """Wait for a writer in flight to finish, then remove everything."""
    with generations.writer_lock(generations.mind_dir(mind_id, base)):
        pass
    remove_mind(mind_id, base)


def sweep(base: Path | None = None) -> list[str]:
    """Remove the index of every mind that no longer exists; returns their ids.

    The indexer removes a mind's index when it sees the mind's memories deleted after the mind; a
    mind whose memories were all deleted before it leaves no such record, so a daily sweep catches it.
    """
    folder = base or generations.root()
    if not folder.is_dir():
        return []
    gone = []
    for entry in sorted(folder.iterdir()):
        if entry.is_dir() and generations.is_mind_folder_name(entry.name) and not mind_exists(entry.name):
            remove_after_writer(entry.name, folder)
            gone.append(entry.name)
    return gone
