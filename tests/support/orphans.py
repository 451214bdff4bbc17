"""Builders for the orphan sweep's tests: index folders of live and of deleted minds, and a run
that runs out of time after a given number of steps (no wall clock)."""

from __future__ import annotations

from pathlib import Path

from synapse.core.ids import new_id
from synapse.storage import tables


def index_folder(root: Path, mind_id: str) -> Path:
    """What the indexer leaves for a mind: its folder with a generation and CURRENT in it."""
    folder = root / mind_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gen-000001.sqlite").write_bytes(b"index")
    (folder / "CURRENT").write_text("gen-000001.sqlite 0\n")
    return folder


def live_mind(dynamo: object, root: Path) -> str:
    """A mind whose item exists, with an index folder."""
    mind_id = new_id("m_")
    item = {**tables.mind_key(mind_id), "id": mind_id, "owner": "user-1"}
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))
    index_folder(root, mind_id)
    return mind_id


def gone_mind(root: Path) -> str:
    """A mind that no longer exists (no mind item) but whose index folder is still there."""
    mind_id = new_id("m_")
    index_folder(root, mind_id)
    return mind_id


class TimeRunsOut:
    """`out_of_time` for a sweep: False for the first `steps` questions, True from then on."""

    def __init__(self, steps: int) -> None:
        self.left = steps

    def __call__(self) -> bool:
        self.left -= 1
        return self.left < 0
