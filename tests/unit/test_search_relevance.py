"""What fusion counts of a lexical hit's words, and whether a hit answers (`relevance.band`): a shared
rare word counts more than a shared ordinary one, a hit holding the question's words that meaning
backs is `strong` near the top of its ranking, never far below it, and one found by meaning alone
is strong only if it depends on what the question asks about (`depends`).

The model is the bag-of-words fake of tests/support/embedding.py: these tests hold the rules, the
question sets of bench/questions.py --meaning-only measure them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from synapse.index import readers
from synapse.index.documents import Change, Doc
from synapse.search import depends, fusion, relevance
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query
from synapse.search.ranking import coverage_of, informative_coverage
from synapse.search.weights import Weights

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_relevance"
NOW = "2026-06-01T00:00:00Z"


def doc(memory_id: str, content: str) -> Doc:
    return Doc(
        memory_id, MIND, "context", memory_id.replace("mem_", "k_"), content, (), "normal", NOW, None, 1
    )


def indexed(tmp_path: Path, docs: list[Doc], others: int = 10) -> sqlite3.Connection:
    """The mind's index holding `docs` and `others` unrelated memories, open for reading."""
    unrelated = [doc(f"mem_other{n}", f"groceries list number{n}") for n in range(others)]
    apply_batch(MIND, [Change.upsert(d) for d in [*docs, *unrelated]], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    return db


def banded(
    db: sqlite3.Connection, text: str, question: object, asked: str = ""
) -> dict[str, tuple[str, float, float | None]]:
    """Each of the first 5 hits' relevance, score and similarity for the query `text` whose vector is
    `question` (`asked`: the question's text, which the dependence check reads; "" leaves it off)."""
    found, _ = fusion.hybrid_hits(
        db, parse_query(text), question, SearchFilters(), 5, 0, NOW, Mode.HYBRID, None, asked
    )
    return {s.hit.id: (s.relevance, s.score, s.similarity) for s in found}


def test_a_shared_rare_word_counts_more_than_a_shared_ordinary_one() -> None:
    # Given two clauses lexical search weighs alike, the first in fewer memories (a higher IDF)
    weights = Weights([1000, 1000])
    weights.idfs = (3.0, 1.0)
    # When a row holding each is counted for the fusion
    rare, ordinary = informative_coverage(weights, 0b01, 0.5), informative_coverage(weights, 0b10, 0.5)
    # Then the rare word's row counts more, and lexical search's own coverage is unchanged
    assert rare == pytest.approx(0.625) and ordinary == pytest.approx(0.375)
    assert coverage_of(weights, 0b01) == coverage_of(weights, 0b10) == 0.5
    # And weights without IDFs (a bench variant's) count as lexical search does
    assert informative_coverage([1000, 1000], 0b01, 0.5) == 0.5


def test_of_two_turns_sharing_as_many_words_the_rarer_word_ranks_first(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a turn holding the question's rare word, two holding its commoner one (a little closer in
    # meaning to the question), and other turns
    answer = doc("mem_answer", "physiotherapist said rest")
    neighbours = [doc("mem_sore", "knee sore"), doc("mem_brace", "knee brace")]
    db = indexed(tmp_path, [answer, *neighbours], others=20)
    q = fake_embedder.embed(["physiotherapist knee"])[0]
    # When asked
    found, _ = fusion.hybrid_hits(
        db, parse_query("physiotherapist knee"), q, SearchFilters(), 3, 0, NOW, Mode.HYBRID
    )
    # Then the rare word's turn comes first
    assert found[0].hit.id == "mem_answer", [(s.hit.id, s.similarity, s.score) for s in found]


def test_a_hit_is_strong_by_its_score_or_by_words_meaning_backs_near_the_top() -> None:
    # A score of STRONG_SCORE is strong; under it, weak
    assert relevance.band(relevance.STRONG_SCORE) == relevance.STRONG
    assert relevance.band(relevance.STRONG_SCORE - 0.01) == relevance.WEAK
    # Words backed by meaning are strong within STRONG_MARGIN of the ranking's best
    assert relevance.band(0.3, best=0.35, backed_words=True) == relevance.STRONG
    # But not far below it (the other turns on the topic)
    assert relevance.band(0.2, best=0.35, backed_words=True) == relevance.WEAK
    # Nor without meaning's backing, however near the top
    assert relevance.band(0.3, best=0.3, backed_words=False) == relevance.WEAK


def test_a_shared_word_is_strong_only_where_meaning_backs_it(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory holding half the question's words and close to it in meaning, and one holding
    # the other half in another sense
    backed = doc("mem_backed", "surgery knee replaced monday")
    other = doc("mem_other", "dad jokes")
    db = indexed(tmp_path, [backed, other])
    # When asked
    bands = banded(db, "surgery dad", fake_embedder.embed(["surgery knee dad"])[0])
    # Then the backed one is strong though it scores under STRONG_SCORE, the other weak
    assert bands["mem_backed"][0] == relevance.STRONG and bands["mem_backed"][1] < relevance.STRONG_SCORE, (
        bands
    )
    assert bands["mem_other"][0] == relevance.WEAK, bands


def test_a_hit_by_meaning_alone_that_does_not_depend_on_the_question_is_weak() -> None:
    # Given a score strong by itself, under SURE_SCORE
    score = relevance.STRONG_SCORE + 0.2
    # When its similarity barely falls (or rises) with a word of the question left out, it is weak
    assert relevance.band(score, drop=relevance.DEPENDS_AT - 0.01) == relevance.WEAK
    assert relevance.band(score, drop=-0.05) == relevance.WEAK
    # And when it falls by DEPENDS_AT or more, strong
    assert relevance.band(score, drop=relevance.DEPENDS_AT) == relevance.STRONG
    # And from SURE_SCORE on, or when nothing was checked, the score alone decides
    assert relevance.band(relevance.SURE_SCORE, drop=0.0) == relevance.STRONG
    assert relevance.band(score) == relevance.STRONG
    # And one not checked (beyond the ranking's first CHECKED_HITS) is weak
    assert relevance.band(score, drop=relevance.unchecked()) == relevance.WEAK
    # And only hits found by meaning alone, MEANT_AT close to the question and under SURE_SCORE, are checked
    close = relevance.MEANT_AT
    assert relevance.needs_check(score, close, by_meaning_only=True)
    assert not relevance.needs_check(score, close, by_meaning_only=False)
    assert not relevance.needs_check(score, close - 0.01, by_meaning_only=True)
    assert not relevance.needs_check(score, None, by_meaning_only=True)
    assert not relevance.needs_check(relevance.SURE_SCORE, close, by_meaning_only=True)


def test_a_hit_by_meaning_alone_ranked_low_by_a_close_lexical_hit_is_strong_if_it_depends() -> None:
    # Given a memory found by meaning alone, close to the question, whose score a lexical hit as
    # close to it faded under STRONG_SCORE
    faded = relevance.STRONG_SCORE - 0.3
    # When it is checked
    # Then it needs the check, and is strong if its similarity falls without a word of the question
    assert relevance.needs_check(faded, relevance.MEANT_AT + 0.05, by_meaning_only=True)
    assert relevance.band(faded, drop=relevance.DEPENDS_AT) == relevance.STRONG
    # And weak if it does not
    assert relevance.band(faded, drop=relevance.DEPENDS_AT - 0.01) == relevance.WEAK
    # And a hit that is not checked keeps the score's verdict
    assert relevance.band(faded) == relevance.WEAK


def test_the_question_is_read_without_each_of_its_words_as_typed() -> None:
    # Given questions with a possessive, a compound, and one word
    # When each word of the query's clauses is left out in turn
    # Then every token holding it goes, the rest stays as typed
    assert depends.without_each("What is his Grandmother's name?", ["grandmother", "name"]) == [
        "What is his name?",
        "What is his Grandmother's",
    ]
    assert depends.without_each("Is he short-sighted?", ["short", "sighted"]) == ["Is he", "Is he"]
    assert depends.without_each("dog", ["dog"]) == [""]
    # And a label no token holds is skipped
    assert depends.without_each("Does he ski?", ["skiing"]) == []


def test_a_memory_close_to_any_question_of_its_shape_is_not_an_answer(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory answering "does he have a dog" by meaning alone (a retriever: the fake's `pet`),
    # and one close to every "does he have a ..." question for its words alone (a hub)
    answer = doc("mem_answer", "owns a golden retriever named biscuit")
    hub = doc("mem_hub", "he does have plenty of friends nearby and always calls them every week")
    db = indexed(tmp_path, [answer, hub])

    def bands(asked: str) -> dict[str, tuple[str, float, float | None]]:
        return banded(db, asked, fake_embedder.embed([asked])[0], asked)

    # When asked about a dog, and about a boat (nothing in the mind)
    dog, boat = bands("does he have a dog"), bands("does he have a boat")
    # Then the retriever is strong, the hub weak though its score alone would make it strong
    assert dog["mem_answer"][0] == relevance.STRONG, dog
    assert boat["mem_hub"][0] == relevance.WEAK, boat
    assert relevance.STRONG_SCORE <= boat["mem_hub"][1] < relevance.SURE_SCORE, boat
    assert dog["mem_hub"][0] == relevance.WEAK, dog


def test_the_question_is_embedded_without_its_words_only_as_far_as_a_hit_needs(
    fake_embedder: FakeEmbedder,
) -> None:
    # Given a question of three words, and memories about its first word, its last, and none
    class Matrix:
        vectors = fake_embedder.embed(["pet", "anna", "groceries"])

        def row_of(self, memory_id: str) -> int | None:
            return {"mem_pet": 0, "mem_anna": 1, "mem_none": 2}.get(memory_id)

    asked = "dog sometimes anna"
    embedded: list[str] = []

    def embed(text: str) -> object:
        embedded.append(text)
        return fake_embedder.embed_query(text)

    question = fake_embedder.embed_query(asked)
    checks = depends.Dependence(asked, ["dog", "sometimes", "anna"], (question, Matrix()), embed)
    # When the memory about the first word is checked, it falls enough at once: one text embedded
    assert (checks.drop("mem_pet", 0.05) or 0.0) >= 0.05
    assert embedded == ["sometimes anna"]
    # When the one about the last word is, every text is needed, each embedded once
    assert (checks.drop("mem_anna", 0.05) or 0.0) >= 0.05
    assert embedded == ["sometimes anna", "dog anna", "dog sometimes"]
    # And the one about none of them falls by none, with no text embedded again
    fallen = checks.drop("mem_none", 0.05)
    assert fallen is not None and fallen < 0.05
    assert len(embedded) == 3
    # And a memory without a vector is not checked
    assert checks.drop("mem_gone", 0.05) is None


def test_an_answer_by_meaning_a_lexical_hit_ranks_lower_is_still_strong(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory answering "dog name" by meaning alone (a retriever: the fake's `pet`), and one
    # holding the word "name" about as close to the question, which fades the first one's score
    answer = doc("mem_answer", "retriever biscuit")
    lexical = doc("mem_lexical", "name")
    db = indexed(tmp_path, [answer, lexical])
    # When asked
    bands = banded(db, "dog name", fake_embedder.embed(["dog name"])[0], "dog name")
    # Then the answer scores under STRONG_SCORE but is strong: it depends on "dog"
    relevance_of, score, similarity = bands["mem_answer"]
    assert score < relevance.STRONG_SCORE and (similarity or 0.0) >= relevance.MEANT_AT, bands
    assert relevance_of == relevance.STRONG, bands
