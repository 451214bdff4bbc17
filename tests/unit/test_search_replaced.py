"""A replaced memory's words find the memory that replaced it (`search.replaced`): searches leave
replaced memories out, and a question in the old value's words gets the current one instead."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from synapse.index import readers
from synapse.index.documents import Change, Doc
from synapse.search import fusion, replaced
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_replaced"
NOW = "2026-06-01T00:00:00Z"


def doc(memory_id: str, content: str, superseded_by: str | None = None, category: str = "fact") -> Doc:
    key = memory_id.replace("mem_", "k_")
    return Doc(memory_id, MIND, category, key, content, (), "normal", NOW, None, 1, NOW, None, superseded_by)


def found(tmp_path: Path, docs: list[Doc], text: str, mode: Mode, filters: SearchFilters) -> list[str]:
    unrelated = [doc(f"mem_other{n}", f"groceries list number{n}") for n in range(10)]
    apply_batch(MIND, [Change.upsert(d) for d in [*docs, *unrelated]], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    question = FakeEmbedder().embed([text])[0] if mode is not Mode.LEXICAL else None
    hits, _ = fusion.hybrid_hits(db, parse_query(text), question, filters, 10, 0, NOW, mode, None, text)
    return [s.hit.id for s in hits]


@pytest.mark.parametrize("mode", [Mode.HYBRID, Mode.LEXICAL])
def test_a_question_in_the_old_values_words_finds_the_value_now_current(
    tmp_path: Path, fake_embedder: FakeEmbedder, mode: Mode
) -> None:
    # Given an address replaced by a move, then the move corrected in turn
    old = doc("mem_old", "lives elm street", superseded_by="mem_move")
    move = doc("mem_move", "moved harbour road", superseded_by="mem_fixed")
    fixed = doc("mem_fixed", "moved harbour road number twelve")
    # When asked in the old value's words
    ids = found(tmp_path, [old, move, fixed], "where does he live", mode, SearchFilters())
    # Then the memory now current answers, the replaced ones do not
    assert "mem_fixed" in ids and "mem_old" not in ids and "mem_move" not in ids, ids


def test_asking_for_replaced_memories_finds_them_and_nothing_stands_in(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given an address replaced by a move
    old = doc("mem_old", "lives elm street", superseded_by="mem_move")
    move = doc("mem_move", "moved harbour road")
    # When asked with include_superseded
    ids = found(tmp_path, [old, move], "live", Mode.LEXICAL, SearchFilters(include_superseded=True))
    # Then the old value itself is the hit, and the move is not pulled in by its words
    assert ids == ["mem_old"], ids


def test_a_current_memory_the_filters_leave_out_stands_for_nothing(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a fact replaced by a note
    old = doc("mem_old", "lives elm street", superseded_by="mem_move")
    move = doc("mem_move", "moved harbour road", category="note")
    # When facts alone are asked for
    ids = found(tmp_path, [old, move], "live", Mode.LEXICAL, SearchFilters(category="fact"))
    # Then neither is found
    assert ids == [], ids


def test_a_mind_without_replaced_memories_ranks_as_before(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given two addresses, neither replaced
    docs = [doc("mem_a", "lives elm street"), doc("mem_b", "moved harbour road")]
    # When asked, Then only the words' hit is found
    assert found(tmp_path, docs, "live", Mode.LEXICAL, SearchFilters()) == ["mem_a"]


def test_a_current_memory_found_by_its_own_words_ranks_by_what_it_stands_for(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given an address replaced by a move that holds one of the question's words, and another
    # memory holding that word more often
    old = doc("mem_old", "lives elm street", superseded_by="mem_move")
    move = doc("mem_move", "moved harbour street")
    other = doc("mem_street", "street food street market street")
    # When asked in the old value's words
    ids = found(tmp_path, [old, move, other], "live street", Mode.LEXICAL, SearchFilters())
    # Then the move ranks by the old value's score (both words), above the other memory
    assert ids[:2] == ["mem_move", "mem_street"], ids


def test_whether_a_generation_holds_a_replaced_memory_is_read_from_its_partial_index(
    tmp_path: Path,
) -> None:
    # Given a generation from before the index (it is dropped), then one more batch
    base = apply_batch(MIND, [Change.upsert(doc("mem_a", "lives elm street"))], tmp_path)
    assert base is not None
    with sqlite3.connect(base) as old:
        old.execute("DROP INDEX docs_replaced")
    apply_batch(MIND, [Change.upsert(doc("mem_b", "moved harbour road"))], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    # When the search asks whether any memory is replaced, Then the batch made the index it reads
    plan = " ".join(str(step[-1]) for step in db.execute(f"EXPLAIN QUERY PLAN {replaced._ANY_SQL}"))
    assert "docs_replaced" in plan, plan
