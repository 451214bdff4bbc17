"""Vectors in the mind's index generation (issue 33): written with the rows, version-gated, deleted
with the memory, reused by text, added to an index from before vectors by the next batches; and the
fusion's rule that meaning never pushes a lexical exact hit off the first page.

The model here is the deterministic fake of tests/support/embedding.py: these tests are about the
index's mechanics, not about meaning (tests/integration/test_search_meaning.py uses the real model)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from synapse.index import matrices, readers, schema, vectors
from synapse.index.documents import Change, Doc
from synapse.search import fusion, recency
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_vectors"
NOW = "2026-06-01T00:00:00Z"


def doc(memory_id: str, content: str, version: int = 1, key: str | None = None, at: str = NOW) -> Doc:
    return Doc(
        memory_id,
        MIND,
        "fact",
        key or memory_id.replace("mem_", "k_"),
        content,
        (),
        "normal",
        at,
        None,
        version,
    )


def stored_vectors(base: Path) -> dict[str, tuple[int, np.ndarray]]:
    """memory id → (version, vector) as the published generation holds them."""
    db = readers.reader(MIND, base)
    assert db is not None
    rows = db.execute("SELECT memory_id, version, vector FROM vectors").fetchall()
    return {m: (v, np.frombuffer(blob, dtype=np.float16).astype(np.float32)) for m, v, blob in rows}


def close_to(vector: np.ndarray, text: str, fake: FakeEmbedder) -> bool:
    return float(vector @ fake.embed([text])[0]) > 0.99


def test_a_memory_gets_its_vector_with_its_rows(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    # Given a batch storing a memory
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Wife is Anna", key="spouse"))], tmp_path)
    # Then its vector is in the generation: key as words, content
    found = stored_vectors(tmp_path)
    assert set(found) == {"mem_1"} and found["mem_1"][0] == 1
    assert close_to(found["mem_1"][1], "spouse\nWife is Anna", fake_embedder)


def test_vectors_are_version_gated(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    # Given version 2 of a memory indexed
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Drives a BMW i4", version=2))], tmp_path)
    # When the stream replays its version 1 (another text)
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Drives a Tesla", version=1))], tmp_path)
    # Then the vector stays version 2's
    version, vector = stored_vectors(tmp_path)["mem_1"]
    assert version == 2 and close_to(vector, "k 1\nDrives a BMW i4", fake_embedder)


def test_a_removed_memory_loses_its_vector_and_a_replay_does_not_bring_it_back(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Has a dog"))], tmp_path)
    apply_batch(MIND, [Change(MIND, "mem_1", 1, None)], tmp_path)
    assert stored_vectors(tmp_path) == {}
    # When version 1's upsert is replayed after its removal
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Has a dog"))], tmp_path)
    # Then no vector comes back
    assert stored_vectors(tmp_path) == {}


def test_a_change_that_keeps_the_text_reuses_the_vector(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Has a dog"))], tmp_path)
    embedded = len(fake_embedder.embedded)
    # When only its version (e.g. its priority) changes
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Has a dog", version=2))], tmp_path)
    # Then nothing is embedded again, and the vector follows the version
    assert len(fake_embedder.embedded) == embedded
    assert stored_vectors(tmp_path)["mem_1"][0] == 2


def _old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[Doc]) -> None:
    """A generation as written before vectors existed: no table, no model."""
    with monkeypatch.context() as patched:
        patched.setattr(schema, "create_vector_table", lambda db: None)
        patched.setattr(vectors, "embedder", lambda: None)
        apply_batch(MIND, [Change.upsert(d) for d in docs], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None and not vectors.has_table(db)


def test_an_old_index_answers_meanwhile_and_upgrades_with_its_next_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> None:
    # Given an index from before vectors, holding a memory
    _old_index(tmp_path, monkeypatch, [doc("mem_1", "Wife is Anna, married since 2015", key="spouse")])
    question = parse_query("who is his partner")
    q = fake_embedder.embed(["who is his partner"])[0]
    # Then a search answers from it meanwhile, lexically (no similarity)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    found, _ = fusion.hybrid_hits(db, parse_query("anna"), q, SearchFilters(), 10, 0, NOW, Mode.HYBRID)
    assert [(s.hit.id, s.similarity) for s in found] == [("mem_1", None)]
    # When the mind's next batch comes (about another memory)
    apply_batch(MIND, [Change.upsert(doc("mem_2", "Has a golden retriever"))], tmp_path)
    # Then the index has vectors for both, and the paraphrase finds the old memory by meaning
    assert set(stored_vectors(tmp_path)) == {"mem_1", "mem_2"}
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    found, _ = fusion.hybrid_hits(db, question, q, SearchFilters(), 10, 0, NOW, Mode.HYBRID)
    assert found[0].hit.id == "mem_1" and found[0].similarity is not None


def test_an_upgrade_embeds_a_bounded_share_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> None:
    _old_index(tmp_path, monkeypatch, [doc(f"mem_{n}", f"fact number {n}") for n in range(7)])
    monkeypatch.setattr(vectors, "FILL_PER_BATCH", 3)
    apply_batch(MIND, [Change.upsert(doc("mem_new", "one more"))], tmp_path)
    assert len(stored_vectors(tmp_path)) == 1 + 3
    apply_batch(MIND, [Change.upsert(doc("mem_new2", "and another"))], tmp_path)
    apply_batch(MIND, [Change.upsert(doc("mem_new3", "and the last"))], tmp_path)
    assert len(stored_vectors(tmp_path)) == 10


def test_a_ranking_does_not_depend_on_the_page_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory holding every word of the query, three holding one of them that mean the query
    # exactly, and one found by meaning alone
    exact = doc("mem_exact", "zebra invoice filed", key="paperwork")
    twins = [doc(f"mem_twin{n}", "partner invoice", key="spouse") for n in range(3)]
    alone = doc("mem_alone", "spouse partner", key="family")
    apply_batch(MIND, [Change.upsert(d) for d in [exact, *twins, alone]], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    monkeypatch.setattr(fusion, "SEMANTIC_WEIGHT", 50.0)  # meaning weighs far more than words
    q = fake_embedder.embed(["spouse\npartner"])[0]
    query = parse_query("zebra invoice")
    whole, more = fusion.hybrid_hits(db, query, q, SearchFilters(), 100, 0, NOW, Mode.HYBRID)
    assert not more and len(whole) == 5
    # When the same ranking is read a page of 1, 2 or 3 at a time
    for size in (1, 2, 3):
        walked: list[fusion.Scored] = []
        for offset in range(0, 5, size):
            page, _ = fusion.hybrid_hits(db, query, q, SearchFilters(), size, offset, NOW, Mode.HYBRID)
            walked += page
        # Then every hit comes once, in the order and with the scores of the whole ranking
        assert [(s.hit.id, s.score) for s in walked] == [(s.hit.id, s.score) for s in whole]
    # And the scores never rise down the ranking
    assert [s.score for s in whole] == sorted((s.score for s in whole), reverse=True)


def test_meaning_alone_does_not_outrank_words_that_answer_the_whole_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory holding every word of the query, and three no word finds that mean it exactly
    exact = doc("mem_exact", "zebra invoice filed", key="paperwork")
    twins = [doc(f"mem_twin{n}", "partner", key="spouse") for n in range(3)]
    apply_batch(MIND, [Change.upsert(d) for d in [exact, *twins]], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    monkeypatch.setattr(fusion, "RESCUE_WEIGHT", 50.0)  # however much meaning alone may weigh
    q = fake_embedder.embed(["zebra invoice filed partner"])[0]  # nearer the words than the twins
    # When the words cover the whole question
    found, _ = fusion.hybrid_hits(
        db, parse_query("zebra invoice"), q, SearchFilters(), 4, 0, NOW, Mode.HYBRID
    )
    # Then their hit ranks first, and what only meaning finds follows it
    assert found[0].hit.id == "mem_exact" and len(found) == 4


def test_of_two_near_duplicates_the_newer_ranks_first(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    older = doc("mem_old", "Drives a Tesla", key="car", at="2026-01-01T00:00:00Z")
    newer = doc("mem_new", "Drives a Tesla now", key="car_now", at="2026-05-01T00:00:00Z")
    apply_batch(MIND, [Change.upsert(older), Change.upsert(newer)], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    ids, updated = ["mem_old", "mem_new"], ["2026-01-01T00:00:00Z", "2026-05-01T00:00:00Z"]
    assert recency.newer_first(ids, updated, [1, 1], [0.41, 0.40], vectors.matrix_of(db)) == [1, 0]
    # But not when the older one matches more of what was asked
    assert recency.newer_first(ids, updated, [2, 1], [0.41, 0.40], vectors.matrix_of(db)) == [0, 1]
    # Nor when it is clearly closer to the question (two turns of a conversation on one topic)
    assert recency.newer_first(ids, updated, [1, 1], [0.75, 0.48], vectors.matrix_of(db)) == [0, 1]


def test_only_each_others_closest_near_duplicates_trade_places(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given three turns of one conversation on one topic: the answer (oldest), and two later turns
    # nearer each other than either is to it, all near-duplicates by cosine
    turns = [
        doc(
            "mem_answer",
            "lisbon june grandmother family trip booked flights",
            key="t1",
            at="2026-01-01T00:00:00Z",
        ),
        doc(
            "mem_party",
            "lisbon june grandmother family trip party ninety",
            key="t2",
            at="2026-02-01T00:00:00Z",
        ),
        doc(
            "mem_later", "lisbon june grandmother family trip party cake", key="t3", at="2026-03-01T00:00:00Z"
        ),
    ]
    apply_batch(MIND, [Change.upsert(t) for t in turns], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    matrix = vectors.matrix_of(db)
    assert matrix is not None
    block = matrix.vectors[[matrix.row_of(t.id) for t in turns]]
    cosines = block @ block.T
    assert recency.DUPLICATE_SIMILARITY <= cosines[0, 1] < cosines[1, 2]
    ids = [t.id for t in turns]
    updated = ["2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"]
    # When the answer ranks first, all matching as many words and about as close to the question
    order = recency.newer_first(ids, updated, [2, 2, 2], [0.50, 0.45, 0.44], matrix)
    # Then it keeps its place (its closest turn's closest is another); the later two trade theirs
    assert order == [0, 2, 1]


def test_near_duplicates_that_tie_as_each_others_closest_keep_their_places(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given three memories written alike, each as close to the other two (a cluster, where which
    # one is "closest" is the float arithmetic's pick, and so the CPU's)
    same = "docker deployment memory line two"
    cluster = [doc(f"mem_{n}", same, key=f"k{n}", at=f"2026-0{n}-01T00:00:00Z") for n in (1, 2, 3)]
    apply_batch(MIND, [Change.upsert(m) for m in cluster], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    ids, updated = [m.id for m in cluster], [m.updated_at for m in cluster]
    # When the oldest ranks first, all matching alike
    order = recency.newer_first(ids, updated, [2, 2, 2], [0.50, 0.50, 0.50], vectors.matrix_of(db))
    # Then no pair trades places: the ranking is the same on every machine
    assert order == [0, 1, 2]


def test_a_word_shared_in_another_sense_does_not_bury_what_meaning_finds(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory sharing the question's one word but about something else, and one that
    # answers the question in other words
    other_sense = doc(
        "mem_firm",
        "Business partner at the law firm, Frank: meets clients, drafts contracts, reviews filings",
        key="law_firm",
    )
    answer = doc("mem_wife", "Wife is Anna", key="family")
    apply_batch(MIND, [Change.upsert(other_sense), Change.upsert(answer)], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    q = fake_embedder.embed(["who is his partner"])[0]
    # When the question is asked
    found, _ = fusion.hybrid_hits(
        db, parse_query("who is his partner"), q, SearchFilters(), 5, 0, NOW, Mode.HYBRID
    )
    # Then the memory meaning finds ranks first: the word alone does not close the question
    assert [s.hit.id for s in found] == ["mem_wife", "mem_firm"]


def test_a_rebuild_reuses_the_vectors_of_unchanged_texts(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    from synapse.index import rebuild

    apply_batch(MIND, [Change.upsert(doc(f"mem_{n}", f"fact number {n}")) for n in range(5)], tmp_path)
    embedded = len(fake_embedder.embedded)
    items = [
        {"id": f"mem_{n}", "mind_id": MIND, "category": "fact", "key": f"k_{n}", "content": text,
         "tags": [], "priority": "normal", "updated_at": NOW, "version": 1}
        for n, text in enumerate([*(f"fact number {n}" for n in range(4)), "changed"])
    ]  # fmt: skip
    done = rebuild.rebuild(MIND, items, tmp_path)
    assert (done.vectors_reused, done.vectors_embedded) == (4, 1)
    assert len(fake_embedder.embedded) == embedded + 1
    assert len(stored_vectors(tmp_path)) == 5


def test_the_matrix_is_loaded_once_per_opened_generation(tmp_path: Path, fake_embedder: FakeEmbedder) -> None:
    apply_batch(MIND, [Change.upsert(doc("mem_1", "Has a dog"))], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    assert vectors.matrix_of(db) is vectors.matrix_of(db)
    apply_batch(MIND, [Change.upsert(doc("mem_2", "Has a cat"))], tmp_path)
    fresh = readers.reader(MIND, tmp_path)
    assert fresh is not None
    matrix = vectors.matrix_of(fresh)
    assert matrix is not None and matrix.ids == ["mem_1", "mem_2"]


def test_a_derived_key_is_not_embedded() -> None:
    assert vectors.embedded_text("note_0123456789abcdef", "Hates cilantro", "") == "Hates cilantro"
    # a key whose words the content already says adds nothing (a derived key is its first words)
    assert vectors.embedded_text("walks_work_cf7811", "Walks to work", "") == "Walks to work"
    assert vectors.embedded_text("home_city", "Lives in Berlin", "") == "home city\nLives in Berlin"
    assert vectors.embedded_text("cafe_facade", "x", "") == "cafe facade\nx"
    assert vectors.embedded_text("coffee_order", "Flat white", "coffee") == "coffee order\nFlat white\ncoffee"


def test_explicit_syntax_and_other_languages_stay_lexical() -> None:
    assert not fusion.semantic_applies(parse_query('"flat white"'), '"flat white"', Mode.HYBRID)
    assert not fusion.semantic_applies(parse_query("dock*"), "dock*", Mode.HYBRID)
    assert not fusion.semantic_applies(
        parse_query("Wann kommt der Schornsteinfeger?"), "Wann kommt der Schornsteinfeger?", Mode.HYBRID
    )
    assert not fusion.semantic_applies(
        parse_query("Когда день рождения мамы?"), "Когда день рождения мамы?", Mode.HYBRID
    )
    assert not fusion.semantic_applies(parse_query("who is his partner"), "who is his partner", Mode.LEXICAL)
    assert fusion.semantic_applies(parse_query("who is his partner"), "who is his partner", Mode.HYBRID)


def test_the_next_generation_of_a_base_reads_only_the_vectors_written_since(
    tmp_path: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind's generation whose matrix a reader holds
    apply_batch(MIND, [Change.upsert(doc(f"mem_{n}", f"fact number {n}")) for n in range(5)], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    first = vectors.matrix_of(db)
    assert first is not None and len(first.ids) == 5
    # When a batch changes one memory and adds another (appended to the same base's log)
    apply_batch(
        MIND,
        [Change.upsert(doc("mem_2", "changed fact", version=2)), Change.upsert(doc("mem_9", "new"))],
        tmp_path,
    )
    loads: list[str] = []
    real_load = matrices.load

    def counted(connection: sqlite3.Connection) -> vectors.Matrix | None:
        loads.append("whole")
        return real_load(connection)

    monkeypatch.setattr(matrices, "load", counted)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    second = vectors.matrix_of(db)
    # Then the reader brought its matrix up to date without reading it whole
    assert loads == [] and second is not None
    # And it is the matrix a whole read gives
    whole = real_load(db)
    assert whole is not None
    assert sorted(second.ids) == sorted(whole.ids) == sorted([*(f"mem_{n}" for n in range(5)), "mem_9"])
    for memory_id in whole.ids:
        at, expected = second.row_of(memory_id), whole.row_of(memory_id)
        assert at is not None and expected is not None
        assert np.allclose(second.vectors[at], whole.vectors[expected])
        assert second.rowids[at] == whole.rowids[expected]


def embedding_slowly(
    fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> tuple[threading.Event, threading.Event, Callable[[Sequence[str]], np.ndarray]]:
    """The embedder made to hold each call until `go_on` is set (`started` says one began); and
    its own embed, to compare with."""
    started, go_on = threading.Event(), threading.Event()
    embed = fake_embedder.embed

    def slowly(texts: Sequence[str]) -> np.ndarray:
        started.set()
        go_on.wait(10)
        return embed(texts)

    monkeypatch.setattr(fake_embedder, "embed", slowly)
    return started, go_on, embed


def test_the_indexer_waits_for_a_write_still_embedding_its_text_instead_of_embedding_it_again(
    fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a write embedding its batch's text (slowly) on one thread of the process
    text = "turn 7\nNadia: the roof needs another pass before Friday, said while waiting"
    started, go_on, embed = embedding_slowly(fake_embedder, monkeypatch)
    write = threading.Thread(target=vectors.embedded_once, args=(fake_embedder, [text]))
    write.start()
    assert started.wait(10)
    # When the indexer of the same process reads the batch's record meanwhile
    threading.Timer(0.2, go_on.set).start()
    with vectors.embedded_ahead([text]):
        taken = vectors._embedded_ahead(vectors.text_hash(text))
    write.join()
    # Then it takes the write's vector once it is ready: the text was embedded once
    assert fake_embedder.embedded == [text]
    assert taken is not None and float(np.dot(taken, embed([text])[0])) > 0.999


def test_a_write_waits_for_the_indexer_embedding_its_text_instead_of_embedding_it_again(
    fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the indexer of the process embedding a batch's text ahead (slowly), before the write
    # that stored it has embedded it for its `similar` (its embedding queued behind others)
    text = "turn 8\nOliver: the garden budget needs another pass, said while the indexer embeds"
    started, go_on, _ = embedding_slowly(fake_embedder, monkeypatch)
    with vectors.embedded_ahead([text]):
        assert started.wait(10)
        # When the write embeds it meanwhile, and again once the indexer is done
        threading.Timer(0.2, go_on.set).start()
        during = vectors.embedded_once(fake_embedder, [text])
        taken = vectors._embedded_ahead(vectors.text_hash(text))
    after = vectors.embedded_once(fake_embedder, [text])
    # Then the text was embedded once, by the indexer, and every one got that vector
    assert fake_embedder.embedded == [text]
    assert taken is not None
    assert np.array_equal(during[0], taken) and np.array_equal(after[0], taken)
