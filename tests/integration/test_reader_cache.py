"""What a search container keeps of the indexes it read is bounded in bytes (issue 43 item 4)."""

from __future__ import annotations

from pathlib import Path

from synapse.index import readers
from synapse.index.documents import Change, Doc

from tests.support.indexing import apply_batch
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

MB = 2**20


class Derived:
    """Stands in for a vector matrix: only its size matters here."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def _indexed_minds(root: Path, count: int) -> list[str]:
    minds = [f"m_cacheBound{i:04d}00000000" for i in range(count)]
    for mind in minds:
        doc = Doc(
            id="mem_a", mind_id=mind, category="fact", key="a", content="alpha", tags=("t",),
            priority="normal", updated_at="2026-11-30T08:00:00.000Z", expires_at=None, version=1,
        )  # fmt: skip
        apply_batch(mind, [Change.upsert(doc)], root)
    return minds


def _derive(mind: str, root: Path, nbytes: int) -> Derived:
    db = readers.reader(mind, root)
    assert db is not None
    found: Derived = readers.derived(db, "vectors", lambda _: Derived(nbytes))
    return found


def test_derived_matrices_stay_within_the_byte_budget(configure: Configure, tmp_path: Path) -> None:
    # Given a container whose index cache may hold 1 MiB, and six minds with an index each
    configure(SYNAPSE_INDEX_CACHE_MB="1")
    minds = _indexed_minds(tmp_path, 6)
    # When each is searched in turn and derives 400 KiB
    for mind in minds:
        _derive(mind, tmp_path, 400 * 1024)
    # Then the container keeps at most the budget, the most recent minds first
    assert readers.cached_bytes() <= 1 * MB
    assert readers.cached_bytes() == 2 * 400 * 1024
    # And a mind let go derives again on its next search
    again = _derive(minds[0], tmp_path, 400 * 1024)
    assert again.nbytes == 400 * 1024


def test_a_mind_larger_than_the_budget_is_still_served_alone(configure: Configure, tmp_path: Path) -> None:
    # Given a 1 MiB budget and two minds
    configure(SYNAPSE_INDEX_CACHE_MB="1")
    small, large = _indexed_minds(tmp_path, 2)
    _derive(small, tmp_path, 100 * 1024)
    # When a mind whose matrix alone is over the budget is searched
    found = _derive(large, tmp_path, 3 * MB)
    # Then it is served and kept, and the others make room
    assert found.nbytes == 3 * MB
    assert readers.cached_bytes() == 3 * MB
    db = readers.reader(large, tmp_path)
    assert db is not None
    assert readers.derived(db, "vectors", lambda _: Derived(1)) is found  # kept: not derived again
