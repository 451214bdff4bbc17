"""A fact's newer value pulled into the ranking from outside the question's own candidates
(`search.newer`): "Where does he live now?" finds the old address by its words; the move that
replaced it shares none of them. With the deterministic fake model of tests/support/embedding.py
(cosines from shared words), through the fusion's one ranking."""

from __future__ import annotations

from pathlib import Path

from synapse.index import readers
from synapse.index.documents import Change, Doc
from synapse.search import fusion, relations
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_newer_pull"
NOW = "2026-06-01T00:00:00Z"
QUESTION = "which street does he live on"


def doc(memory_id: str, content: str, key: str, created: str, tags: tuple[str, ...] = ()) -> Doc:
    return Doc(memory_id, MIND, "fact", key, content, tags, "normal", created, None, 1, created)


OLDER = doc(
    "mem_old", "He lives at 14 Elm Street with the kids", "home_address", "2026-01-01T00:00:00Z", ("home",)
)
MOVED = doc(
    "mem_moved", "He moved to 22 Harbour Road with the kids", "moved_harbour_3f9a2c", "2026-04-01T00:00:00Z"
)
OTHER = doc("mem_other", "Sister Grace keeps a cat", "sister", "2026-02-01T00:00:00Z")


def ranked(tmp_path: Path, fake_embedder: FakeEmbedder, docs: list[Doc], filters: SearchFilters) -> list[str]:
    apply_batch(MIND, [Change.upsert(d) for d in docs], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    question = fake_embedder.embed_query(QUESTION)
    hits, _ = fusion.hybrid_hits(db, parse_query(QUESTION), question, filters, 10, 0, NOW, Mode.HYBRID)
    return [s.hit.id for s in hits]


def test_a_move_the_question_cannot_find_is_pulled_in_above_the_address_it_replaces(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given an address and, months later, a move that shares none of the question's words
    # When the question is searched
    ids = ranked(tmp_path, fake_embedder, [OLDER, MOVED, OTHER], SearchFilters())
    # Then the move ranks right above the address it replaces
    assert ids[:2] == ["mem_moved", "mem_old"]


def test_a_newer_value_the_filters_leave_out_is_not_pulled(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given the same memories, searched within the old address's tag only
    ids = ranked(tmp_path, fake_embedder, [OLDER, MOVED, OTHER], SearchFilters(tag="home"))
    # Then the move, which the tag leaves out, is not in the ranking
    assert ids == ["mem_old"]


def test_a_later_memory_that_tells_no_life_event_is_not_pulled(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a later memory near the address that says "now" of something else (no move, no new job)
    later = MOVED._replace(content="He now keeps the spare keys at Elm with the kids")
    # When the question is searched
    ids = ranked(tmp_path, fake_embedder, [OLDER, later, OTHER], SearchFilters())
    # Then it is not brought in by the address: only a life event is pulled, of the subject it changes
    assert "mem_moved" not in ids
    address = relations.subject_of(OLDER.key, OLDER.content).words
    assert relations.said_by_event(MOVED.content, address) and not relations.said_by_event(
        later.content, address
    )
    assert not relations.said_by_event("Got married in June", address)
