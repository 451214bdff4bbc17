"""Pages that add up (issue 41, item 1): in every mode, walking a search's pages returns each matching
memory once and only once, in the one order of the whole ranking, whatever the page size; the scores
shown never rise down it.

A property over random minds (a small vocabulary, so words repeat, memories tie and near-duplicates
of different ages meet, some saying they are a newer value), random queries, filters and page sizes.
The pools are shrunk so that the lexical matches beyond the pool (read in lexical order after it) are
walked too. The model is the deterministic fake of tests/support/embedding.py (the mechanics, not
meaning)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synapse.index import readers, vectors
from synapse.index.documents import Change, Doc
from synapse.search import fusion, recency
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query

from tests.support.embedding import FakeEmbedder
from tests.support.indexing import apply_batch

MIND = "m_paging"
NOW = "2026-06-01T00:00:00Z"
WORDS = ["zebra", "invoice", "partner", "wife", "dog", "car", "garden", "session", "coffee", "black"]
CATEGORIES = ["fact", "note"]
# A memory holding "now" says it is a newer value: it may move above the one it updates (issue 42).
CONTENT_WORDS = [*WORDS, "now"]

memories = st.lists(
    st.tuples(
        st.lists(st.sampled_from(CONTENT_WORDS), min_size=1, max_size=4),
        st.sampled_from(CATEGORIES),
        st.integers(min_value=1, max_value=9),  # the month it was last updated
    ),
    min_size=1,
    max_size=40,
)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


def _docs(drawn: list[tuple[list[str], str, int]]) -> list[Doc]:
    return [
        Doc(
            f"mem_{n:03d}",
            MIND,
            category,
            f"k_{n:03d}",
            " ".join(words),
            (),
            "normal",
            f"2026-0{month}-01T00:00:{n % 60:02d}Z",
            None,
            1,
        )
        for n, (words, category, month) in enumerate(drawn)
    ]


def _walk(
    db: sqlite3.Connection, q: str, question: Any, filters: SearchFilters, size: int, mode: Mode
) -> list[fusion.Scored]:
    query = parse_query(q)
    walked: list[fusion.Scored] = []
    offset, more = 0, True
    while more:
        page, more = fusion.hybrid_hits(db, query, question, filters, size, offset, NOW, mode)
        assert len(page) == size or not more  # a page is full while more follow
        walked += page
        offset += size
        assert offset < 1000
    return walked


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    drawn=memories,
    q=queries,
    size=st.integers(min_value=1, max_value=7),
    mode=st.sampled_from(list(Mode)),
    category=st.sampled_from([None, *CATEGORIES]),
)
def test_pages_add_up_to_the_one_ranking(
    monkeypatch: pytest.MonkeyPatch,
    drawn: list[tuple[list[str], str, int]],
    q: str,
    size: int,
    mode: Mode,
    category: str | None,
) -> None:
    monkeypatch.setattr(fusion, "LEXICAL_POOL", 6)
    monkeypatch.setattr(fusion, "SEMANTIC_POOL", 4)
    monkeypatch.setattr(recency, "CLEAR_MARGIN", 0.0)  # few words tie often: let newer values move
    fake = FakeEmbedder()
    vectors.use_embedder(fake)
    try:
        with tempfile.TemporaryDirectory() as folder:
            base = Path(folder)
            docs = _docs(drawn)
            # Given a random mind
            apply_batch(MIND, [Change.upsert(d) for d in docs], base)
            db = readers.reader(MIND, base)
            assert db is not None
            question = None if mode is Mode.LEXICAL else fake.embed_query(q)
            filters = SearchFilters(category=category)
            # When its ranking is read whole, and page by page
            whole, more = fusion.hybrid_hits(db, parse_query(q), question, filters, 1000, 0, NOW, mode)
            walked = _walk(db, q, question, filters, size, mode)
    finally:
        vectors.use_embedder(None)
    # Then the pages hold each memory once, in the whole ranking's order, with its scores
    ids = [s.hit.id for s in walked]
    assert len(ids) == len(set(ids))
    assert not more
    assert [(s.hit.id, s.score) for s in walked] == [(s.hit.id, s.score) for s in whole]
    # And the scores never rise down it
    scores = [s.score for s in walked]
    assert scores == sorted(scores, reverse=True)
    # And every memory the words match is there (in every mode but meaning alone), none out of filter
    wanted = set(q.split())
    kept = {d.id for d in docs if category is None or d.category == category}
    lexical = {d.id for d in docs if d.id in kept and wanted & set(d.content.split())}
    assert set(ids) <= kept
    if mode is not Mode.SEMANTIC:
        assert lexical <= set(ids)
    if mode is Mode.LEXICAL:
        assert set(ids) == lexical
