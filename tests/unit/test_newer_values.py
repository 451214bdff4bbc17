"""A newer value above the fact it updates, without `supersedes` (issue 42): `recency.newer_values`
on given cosines (the rule), then through the fusion's one ranking with the deterministic fake model
of tests/support/embedding.py (the mechanics: order, score, pages)."""

from __future__ import annotations

from pathlib import Path

from synapse.index import readers
from synapse.index.documents import Change, Doc
from synapse.search import fusion, recency
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query
from synapse.search.recency import Written

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch

MIND = "m_newer"
NOW = "2026-06-01T00:00:00Z"
OLDER = Written("employer", "Works at Acme Corp as a software engineer", "2026-01-05T09:00:00Z")
NEWER = Written("new_job", "Now works at Globex as an engineering manager", "2026-03-20T09:00:00Z")
OTHER = Written("standup", "Team standup at 9:15 on weekdays", "2026-02-01T09:00:00Z")


def cosines(pairs: dict[tuple[int, int], float], n: int) -> list[list[float]]:
    """A symmetric matrix of cosines, 1 on the diagonal, `pairs` given, 0.1 elsewhere."""
    matrix = [[1.0 if a == b else 0.1 for b in range(n)] for a in range(n)]
    for (a, b), value in pairs.items():
        matrix[a][b] = matrix[b][a] = value
    return matrix


def test_a_newer_value_and_the_fact_it_updates_are_paired_newer_to_older() -> None:
    # Given the older fact ranked first, an unrelated hit, and the update 0.40 alike to the older
    hits = [OLDER, OTHER, NEWER]
    # When the pairs are read
    pairs = recency.newer_values(hits, cosines({(0, 2): 0.40}, 3))
    # Then the newer one is paired with the older one (shared subject word "works" lifts 0.40)
    assert pairs == {2: 0}


def test_a_later_memory_that_does_not_say_it_is_a_new_value_is_not_paired() -> None:
    # Given two memories on one subject, the later one saying nothing changed (a conversation's turn)
    later = NEWER._replace(content="Works at Globex with Anna on the billing team")
    # Then neither moves for the other
    assert recency.newer_values([OLDER, OTHER, later], cosines({(0, 2): 0.6}, 3)) == {}


def test_a_near_tie_with_a_third_hit_pairs_nothing() -> None:
    # Given an older fact as related to a third hit as to the update (within CLEAR_MARGIN)
    third = Written("employer_history", "Worked at Initech before Acme", "2025-01-01T00:00:00Z")
    hits = [OLDER, third, NEWER]
    score = 0.40
    tie = cosines({(0, 2): score, (0, 1): score + recency.CLEAR_MARGIN / 2}, 3)
    # Then the older one has no clear partner, and nothing is paired
    assert recency.newer_values(hits, tie) == {}


def test_an_update_as_related_to_two_hits_goes_with_the_one_the_question_ranks_higher() -> None:
    # Given "Weighs 92 kg" ranked first, a run ranked lower, and "Down to 85 kg after the running
    # programme" as related to both (within CLEAR_MARGIN: "kg" with one, "running" with the other)
    weight = Written("weight", "Weighs 92 kg", "2026-01-05T09:00:00Z")
    runs = Written("runs_10_km_three_times_8d3541", "Runs 10 km three times a week", "2026-01-06T09:00:00Z")
    down = Written(
        "down_85_kg_after_running_0b7403", "Down to 85 kg after the running programme", "2026-03-20T09:00:00Z"
    )
    near = cosines({(0, 2): 0.479, (1, 2): 0.481}, 3)
    # When the pairs are read
    pairs = recency.newer_values([weight, runs, down], near)
    # Then the update goes with the weight, which the question is about, and that has no other partner
    assert pairs == {2: 0}
    # And ranked the other way round it goes with the run, whose clear partner it is too
    assert recency.newer_values([runs, weight, down], near) == {2: 0}


def test_a_pair_below_the_score_is_not_paired_and_equal_times_say_nothing() -> None:
    weak = NEWER._replace(key="new_role", content="Now manages a team of seven")
    assert recency.newer_values([OLDER._replace(key="office"), weak], cosines({(0, 1): 0.2}, 2)) == {}
    same_time = NEWER._replace(since=OLDER.since)
    assert recency.newer_values([OLDER, same_time], cosines({(0, 1): 0.6}, 2)) == {}


def test_says_update_reads_a_change_not_a_state_or_an_event() -> None:
    from synapse.search.relations import says_update

    assert says_update("Now works at Globex") and says_update("Rent went up to 1,950 a month")
    assert says_update("Down to 85 kg after the running programme")
    assert says_update("Went fully vegan in October") and not says_update("Went to Lisbon in October")
    assert not says_update("Currently reading a novel") and not says_update("Grew up in Riga")
    assert not says_update("Got married in 2016") and not says_update("Picks Mark up from the Kita")
    # And "new" says so only of what the older one is about
    phone = frozenset({"phone", "number"})
    assert says_update("New mobile number: 555-0199", phone) and not says_update("A new thing at work", phone)


def doc(memory_id: str, content: str, key: str, created: str, updated: str | None = None) -> Doc:
    return Doc(memory_id, MIND, "fact", key, content, (), "normal", updated or created, None, 1, created)


def test_in_the_ranking_the_newer_value_takes_the_older_ones_place_and_score(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a car and, months later, its newer value that matches less of the question; the older one
    # edited since (updated last), so it is by when each was written that the newer is told apart
    older = doc("mem_old", "Drives a Tesla car", "car", "2026-01-01T00:00:00Z", "2026-05-20T00:00:00Z")
    newer = doc("mem_new", "Drives a BMW now", "car_now", "2026-04-01T00:00:00Z")
    other = doc("mem_other", "Tesla shares sold", "stocks", "2026-02-01T00:00:00Z")
    apply_batch(MIND, [Change.upsert(d) for d in (older, newer, other)], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    q = "which tesla car does he drive"
    question = fake_embedder.embed_query(q)
    # When the question is searched whole, and one hit a page
    whole, _ = fusion.hybrid_hits(db, parse_query(q), question, SearchFilters(), 10, 0, NOW, Mode.HYBRID)
    pages = [
        fusion.hybrid_hits(db, parse_query(q), question, SearchFilters(), 1, at, NOW, Mode.HYBRID)[0][0]
        for at in range(len(whole))
    ]
    # Then the newer value ranks right above the older one, with its score
    ids = [s.hit.id for s in whole]
    assert ids.index("mem_new") + 1 == ids.index("mem_old")
    assert whole[ids.index("mem_new")].score == whole[ids.index("mem_old")].score
    # And the pages are that one ranking
    assert [(s.hit.id, s.score) for s in pages] == [(s.hit.id, s.score) for s in whole]


def test_without_the_change_words_the_ranking_keeps_its_order(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    older = doc("mem_old", "Drives a Tesla car", "car", "2026-01-01T00:00:00Z")
    later = doc("mem_new", "Drives a BMW too", "car_two", "2026-04-01T00:00:00Z")
    apply_batch(MIND, [Change.upsert(d) for d in (older, later)], tmp_path)
    db = readers.reader(MIND, tmp_path)
    assert db is not None
    q = "which tesla car does he drive"
    whole, _ = fusion.hybrid_hits(
        db, parse_query(q), fake_embedder.embed_query(q), SearchFilters(), 10, 0, NOW, Mode.HYBRID
    )
    assert [s.hit.id for s in whole] == ["mem_old", "mem_new"]
