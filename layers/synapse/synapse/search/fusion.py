"""The ranking of a best-match query, in every mode: one order and one score per memory, whatever
page is asked.

Both sides are read from one generation: the lexical candidates (`ranking.coverage_rows`: coverage
then BM25, the first LEXICAL_POOL, without snippets) and the cosine similarity of the question to
every memory's vector (`vectors.Matrix`, exact dot products; the SEMANTIC_POOL most similar over
SIMILARITY_FLOOR are candidates). Each candidate gets one fused score:

    a lexical hit:     coverage' x support(sim) + BM25_WEIGHT x saturated(BM25) + SEMANTIC_WEIGHT x lift(sim)
    found by meaning:  RESCUE_WEIGHT x lift(sim) x (1 - closing coverage) ** RESCUE_FADE
    lift(s) = max(0, s - SIMILARITY_FLOOR) / (1 - SIMILARITY_FLOOR)
    support(s): UNSUPPORTED at lift 0, rising to 1 at SUPPORTED_AT (a shared word counts in full
                only where the memory is about what was asked)
    saturated(x) = x / (x + BM25_HALF)  (BM25 on a scale of its own, not the pool's best: a
                score means the same on every page and for every query of the mind)
    coverage' = informative coverage ** COVERAGE_POWER: the share of the question's words it holds,
                each counted half by its weight in lexical search (1 for an ordinary word) and half
                by its full IDF (FULL_IDF_SHARE: a shared rare word counts more than an ordinary one)
    closing coverage: the best informative coverage of a lexical hit with lift > 0 and a similarity
                      at least sim - CLOSING_MARGIN

The candidates are ranked by that score, then by their lexical position, then by id, once; the
post-fusion adjustments (`recency.after_fusion`, the one place for them) may reorder that list; then the
scores shown are made non-increasing down it (a hit moved up by an adjustment shows the score of
the place it took at most; a newer value, the score of the fact it updates), and pages are cut from
it. Lexical matches beyond the pool follow in lexical order. So walking a search's pages returns
each candidate once, in one order that does not depend on `limit`. `mode=lexical` is the same with
no meaning (coverage and BM25 alone); `mode=semantic` ranks by similarity alone (RESCUE_WEIGHT x
lift, over the floor).

A hit is `strong` or `weak` by `relevance.band`: its score, for a lexical hit close to the question
in meaning (SUPPORTED_AT) its distance to the ranking's best score, for one found by meaning alone
how much it `depends` on the question's words. A memory by meaning alone under the floor is no hit.

The semantic side is off (hybrid is lexical) for explicit syntax and for a query the model does not
serve (another language: `synapse.embedding.serves`).
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Any, NamedTuple

from synapse.index import vectors
from synapse.search import candidates, in_time, newer, recency, replaced
from synapse.search.candidates import Candidate
from synapse.search.depends import Dependence
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import Query
from synapse.search.ranking import Hit, coverage_of, coverage_rows, index_hits, informative_coverage
from synapse.search.relevance import CHECKED_HITS, DEPENDS_AT, MEANT_AT, band, needs_check, unchecked
from synapse.search.relevance import STRONG as STRONG
from synapse.search.relevance import WEAK as WEAK
from synapse.when.window import Window

# Candidates from each side: fixed, so that the order never depends on the page asked. A page
# beyond LEXICAL_POOL continues with the lexical matches in lexical order. 50 lexical candidates
# cost the conversation log 0.07 of MRR (its answering turns share the speakers' names with most
# turns: bench/questions.py --meaning-only), for ~0.7 ms less at 10,000 memories.
LEXICAL_POOL = candidates.AFTER_THE_WORDS
SEMANTIC_POOL = 50
BM25_WEIGHT = 0.1
COVERAGE_POWER = 2.0  # a lexical hit's words count coverage ** this (partial matches count less)
BM25_HALF = 2.0  # the BM25 at which saturated(BM25) is one half
SEMANTIC_WEIGHT = 0.25
RESCUE_WEIGHT = 4.0
SIMILARITY_FLOOR = 0.2
# The share of a lexical hit's coverage, in fusion, that counts its words by their full IDF (the rest
# by lexical search's weights, 1 for any word in at most a tenth of the memories): of two turns of a
# log sharing as many words, the rarer word ("physiotherapist", in one turn; "knee", in six) marks
# the answer, where meaning preferred the neighbour. Chosen on the tune halves (docs/search.md).
FULL_IDF_SHARE = 0.5
# How fast a rescue fades as lexical search covers more of the question: (1 - best coverage) ** this.
RESCUE_FADE = 2.5
# A lexical hit at least this close to the question in meaning closes it for the memories meaning
# alone finds (those no closer than it by more than CLOSING_MARGIN). One at the floor is about
# something else ("go" to bed / "Go and Postgres"): its coverage counts UNSUPPORTED of itself, and
# in full only from SUPPORTED_AT ("what does he do for a living?": "Lives at 14 Elm Street" shares
# `living` at 0.24, "Backend engineer at Acme Corp" answers it at 0.32 and must come first).
CLOSING_MARGIN = 0.05
UNSUPPORTED = 0.35
SUPPORTED_AT = 0.4


class Scored(NamedTuple):
    """A hit with its semantic similarity to the query (None: the semantic side did not run), the
    score it was ranked by, and whether it answers (`relevance.band`)."""

    hit: Hit
    similarity: float | None
    score: float = 0.0
    relevance: str = WEAK


def model_serves(query: Query, raw: str) -> bool:
    """Whether the model understands the query: English, by its function words and letters."""
    return query.latin == "english" and vectors.serves(raw)


def semantic_applies(query: Query, raw: str, mode: Mode) -> bool:
    """Explicit syntax stays lexical; a best-match query gets meaning unless asked for words only, or
    in a language the model does not serve (asked for meaning alone, it is given it anyway)."""
    if query.explicit or mode is Mode.LEXICAL:
        return False
    return mode is Mode.SEMANTIC or model_serves(query, raw)


def lift(similarity: float) -> float:
    return max(0.0, similarity - SIMILARITY_FLOOR) / (1.0 - SIMILARITY_FLOOR)


def support(similarity: float) -> float:
    """How much of a lexical hit's coverage counts: UNSUPPORTED where meaning does not back the
    words (under the floor), all of it from SUPPORTED_AT on, linearly between."""
    if similarity <= SIMILARITY_FLOOR:
        return UNSUPPORTED
    if similarity >= SUPPORTED_AT:
        return 1.0
    rise = (similarity - SIMILARITY_FLOOR) / (SUPPORTED_AT - SIMILARITY_FLOOR)
    return UNSUPPORTED + (1.0 - UNSUPPORTED) * rise


def saturated(bm25: float) -> float:
    """BM25 on a fixed 0-1 scale (not over the pool's best, which would change with the pool)."""
    bm25 = max(bm25, 0.0)
    return bm25 / (bm25 + BM25_HALF)


def words_score(coverage: float, bm25: float) -> float:
    """A lexical hit's score by words alone (lexical mode, explicit syntax, no vectors)."""
    return coverage + BM25_WEIGHT * saturated(bm25)


def fused_score(coverage: float, bm25: float, similarity: float) -> float:
    """A lexical hit's: its words, counted as far as meaning supports them, and meaning to break
    ties between hits of similar lexical evidence (SEMANTIC_WEIGHT)."""
    words = float(coverage**COVERAGE_POWER) * support(similarity)
    return words + BM25_WEIGHT * saturated(bm25) + SEMANTIC_WEIGHT * lift(similarity)


def meaning_score(similarity: float) -> float:
    """A memory's score by meaning alone (semantic mode; a rescue the words leave open)."""
    return RESCUE_WEIGHT * lift(similarity)


def rescued_score(similarity: float, closing_coverage: float) -> float:
    """A memory lexical search did not find (in its first LEXICAL_POOL): meaning alone, as far as the
    words left the question open. `closing_coverage` is the best coverage of the lexical hits about
    as close to the question in meaning (CLOSING_MARGIN): when lexical search matched the question's
    informative words in such a memory, the answer is most likely there (names, exact words in a
    log); when it matched little, or only in memories further from the question than this one,
    meaning is the better witness (a paraphrase shares no word)."""
    return float(meaning_score(similarity) * (1.0 - closing_coverage) ** RESCUE_FADE)


def _closing_coverage(supported: list[tuple[float, float]]) -> Callable[[float], float]:
    """For a similarity, the best coverage of the lexical hits (similarity, coverage) no further from
    the question than it by more than CLOSING_MARGIN (a sorted list and running maxima: one bisection
    a rescued memory)."""
    ordered = sorted(supported, key=lambda hit: -hit[0])
    negated = [-similarity for similarity, _ in ordered]  # ascending
    best = list(accumulate((coverage for _, coverage in ordered), max))

    def closing(similarity: float) -> float:
        reached = bisect_right(negated, CLOSING_MARGIN - similarity)
        return best[reached - 1] if reached else 0.0

    return closing


def _scored_as_hit(weights: list[int], matrix: vectors.Matrix | None, sims: Any) -> Callable[[Any], float]:
    """A lexical row's score as the pool's lexical hits get theirs (for a replaced memory)."""

    def score(row: Any) -> float:
        if matrix is None or sims is None:
            return words_score(coverage_of(weights, row.mask), row.score)
        coverage = informative_coverage(weights, row.mask, FULL_IDF_SHARE)
        return fused_score(coverage, row.score, matrix.similarity_of(sims, row.id))

    return score


def _non_increasing(ranked: list[Candidate], ceiling: float) -> list[float]:
    """The scores shown down a ranking: each at most the one above it (an adjustment that moved a
    hit up shows the score of the place it took at most)."""
    shown = []
    for candidate in ranked:
        ceiling = min(ceiling, candidate.fused)
        shown.append(ceiling)
    return shown


class Ranking(NamedTuple):
    """A query's ranked candidates (the pool, fused), and how to read the lexical matches after them."""

    ranked: list[Candidate]
    scores: list[float]  # the score shown for each, non-increasing
    weights: list[int]
    tail_from: int | None  # the lexical position the tail starts at (None: no tail)
    sims: Any  # the question's similarity to every row of the matrix (None: no meaning)
    matrix: vectors.Matrix | None


def _hybrid_pool(
    db: sqlite3.Connection,
    words: tuple[list[Any], list[int]],
    meaning: tuple[vectors.Matrix, Any],
    filters: SearchFilters,
    now: str,
    window: Window | None,
    pool: dict[str, Candidate],
) -> None:
    """The pool of a hybrid ranking: the lexical hits (`words`: rows and weights) fused with their
    similarity, the memories found by meaning alone rescued, and the question's window favoured."""
    (lexical, weights), (matrix, sims) = words, meaning
    coverages: dict[int, float] = {}  # by mask: the pool's hits share a few
    at_rows = [matrix.row_of(found_row[3]) for found_row in lexical]
    lexical_sims = sims[[0 if r is None else r for r in at_rows]].tolist() if lexical else []
    supported: list[tuple[float, float]] = []  # the lexical hits' (similarity, coverage) over the floor
    for at, found_row in enumerate(lexical):
        row = candidates.lexical_row(found_row)
        similarity = 0.0 if at_rows[at] is None else lexical_sims[at]
        coverage = coverages.get(row.mask)
        if coverage is None:
            coverage = coverages[row.mask] = informative_coverage(weights, row.mask, FULL_IDF_SHARE)
        if lift(similarity) > 0:
            supported.append((similarity, coverage))
        pool[row.id] = Candidate(fused_score(coverage, row.score, similarity), at, row, similarity)
    closing = _closing_coverage(supported)
    for row, similarity in candidates.semantic_rows(
        db, matrix, sims, filters, SEMANTIC_POOL, now, SIMILARITY_FLOOR
    ):
        if row.id not in pool:
            pool[row.id] = Candidate(
                rescued_score(similarity, closing(similarity)), LEXICAL_POOL, row, similarity
            )
    if window is not None:
        in_time.favour_window(
            db, (window, filters, now), pool, meaning, lambda s: rescued_score(s, closing(s))
        )


def _rank(
    db: sqlite3.Connection,
    query: Query,
    question: Any | None,
    filters: SearchFilters,
    wanted: int,
    now: str,
    mode: Mode,
    window: Window | None = None,
) -> Ranking:
    """Every candidate of the pool, fused and ranked, adjusted once (`recency.after_fusion`); the memories
    dated in the question's `window` join the pool and rank up (`in_time.favour_window`)."""
    matrix = vectors.matrix_of(db) if question is not None else None
    if matrix is not None and not len(matrix.rowids):
        matrix = None
    sims = matrix.similarities(question) if matrix is not None else None
    if mode is Mode.SEMANTIC and matrix is not None:
        found = candidates.semantic_rows(db, matrix, sims, filters, wanted, now, SIMILARITY_FLOOR)
        chosen = {row.id: Candidate(meaning_score(s), LEXICAL_POOL, row, s) for row, s in found}
        if window is not None:
            in_time.favour_window(db, (window, filters, now), chosen, (matrix, sims), meaning_score)
        ranked = sorted(chosen.values(), key=lambda c: (-c.fused, -(c.similarity or 0.0), c.row.id))
        return Ranking(ranked, [c.fused for c in ranked], [], None, sims, matrix)
    lexical: list[Any] = []
    weights: list[int] = []
    if query.clauses:  # none: a question of nothing but time and function words, its window alone
        lexical, weights = coverage_rows(db, query, filters, LEXICAL_POOL + 1, 0, now)
    tail_from = LEXICAL_POOL if len(lexical) > LEXICAL_POOL else None
    lexical = lexical[:LEXICAL_POOL]
    coverages: dict[int, float] = {}  # by mask: the pool's hits share a few
    pool: dict[str, Candidate] = {}
    if matrix is None or sims is None:
        for at, found_row in enumerate(lexical):
            row = candidates.lexical_row(found_row)
            coverage = coverages.get(row.mask)
            if coverage is None:
                coverage = coverages[row.mask] = coverage_of(weights, row.mask)
            pool[row.id] = Candidate(words_score(coverage, row.score), at, row, None)
    else:
        _hybrid_pool(db, (lexical, weights), (matrix, sims), filters, now, window, pool)
    standing = replaced.stand_ins(db, query, filters, now, _scored_as_hit(weights, matrix, sims))
    replaced.join(pool, standing, lambda i: None if matrix is None else matrix.similarity_of(sims, i))
    if (matrix is None or sims is None) and window is not None:
        in_time.favour_window(db, (window, filters, now), pool, None, lambda _: 0.0)
    ranked = sorted(pool.values(), key=lambda c: (-c.fused, c.lexical_at, c.row.id))
    if matrix is not None:
        ranked = newer.with_newer_values(
            db, ranked, matrix, (filters, now), lambda i: matrix.similarity_of(sims, i)
        )
    ranked = recency.after_fusion(ranked, matrix, db)
    scores = _non_increasing(ranked, ranked[0].fused if ranked else 0.0)
    return Ranking(ranked, scores, weights, tail_from, sims, matrix)


def _tail(
    db: sqlite3.Connection,
    query: Query,
    filters: SearchFilters,
    ranking: Ranking,
    start: int,
    end: int,
    now: str,
) -> tuple[list[Candidate], list[float], bool]:
    """Positions `start` to `end` of the lexical matches after the pool (those the pool does not hold
    already), in lexical order, their scores continuing down from the pool's last; and whether more
    follow. The tail is read from its start, so each page's scores are the same however it is cut."""
    assert ranking.tail_from is not None
    pooled = {c.row.id for c in ranking.ranked}
    wanted = end + 1
    read = wanted + len(pooled)
    found, _ = coverage_rows(db, query, filters, read, ranking.tail_from, now)
    rows = [row for row in (candidates.lexical_row(f) for f in found) if row.id not in pooled]
    ceiling = ranking.scores[-1] if ranking.scores else 1.0 + BM25_WEIGHT
    tail: list[Candidate] = []
    coverages: dict[int, float] = {}
    for at, row in enumerate(rows[:wanted]):
        coverage = coverages.get(row.mask)
        if coverage is None:
            coverage = coverages[row.mask] = coverage_of(ranking.weights, row.mask)
        if ranking.sims is not None and ranking.matrix is not None:
            similarity: float | None = ranking.matrix.similarity_of(ranking.sims, row.id)
            informative = informative_coverage(ranking.weights, row.mask, FULL_IDF_SHARE)
            fused = fused_score(informative, row.score, similarity or 0.0)
        else:
            similarity, fused = None, words_score(coverage, row.score)
        tail.append(Candidate(fused, ranking.tail_from + at, row, similarity))
    scores = _non_increasing(tail, ceiling)
    more = len(rows) > end or len(found) == read
    return tail[start:end], scores[start:end], more


def hybrid_hits(
    db: sqlite3.Connection,
    query: Query,
    question: Any | None,
    filters: SearchFilters,
    limit: int,
    offset: int,
    now: str,
    mode: Mode,
    window: Window | None = None,
    asked: str = "",
) -> tuple[list[Scored], bool]:
    """Hits `offset` to `offset + limit` of the query's one ranking (the module's docstring), and
    whether more follow (`question`: the query's vector, of the text `asked`; None, or a generation
    without vectors, gives the ranking by words alone)."""
    if query.explicit:  # exact meaning: lexical search's own order (coverage, then BM25)
        hits, more = index_hits(db, query, filters, limit, offset, now)
        shown = accumulate((words_score(h.coverage, h.score) for h in hits), min)
        return [Scored(h, None, score, band(score)) for h, score in zip(hits, shown, strict=True)], more
    ranking = _rank(db, query, question, filters, offset + limit + 1, now, mode, window)
    pooled = len(ranking.ranked)
    page = ranking.ranked[offset : offset + limit]
    scores = ranking.scores[offset : offset + limit]
    more = pooled > offset + limit or ranking.tail_from is not None
    if len(page) < limit and ranking.tail_from is not None:
        start = max(0, offset - pooled)
        rest, rest_scores, more = _tail(db, query, filters, ranking, start, start + limit - len(page), now)
        page, scores = page + rest, scores + rest_scores
    hits = candidates.page_hits(db, query, [c.row for c in page], ranking.weights)
    best = ranking.scores[0] if ranking.scores else 0.0
    timed_words = window is not None and bool(query.clauses)
    depends = None
    if question is not None and ranking.matrix is not None:
        depends = Dependence(asked, query.terms, (question, ranking.matrix), vectors.question_vector)
    return [
        Scored(
            h,
            _rounded(c.similarity),
            score,
            _band(h, c, (score, best, timed_words), depends, offset + at),
        )
        for at, (h, c, score) in enumerate(zip(hits, page, scores, strict=True))
    ], more


def _rounded(similarity: float | None) -> float | None:
    return None if similarity is None else round(similarity, 4)


def _band(
    hit: Hit, c: Candidate, asked: tuple[float, float, bool], depends: Dependence | None, at: int
) -> str:
    """Whether the hit (at `at`) answers (`relevance.band`; `asked`: its score, the best, whether the
    question has a time and words beside it): its words are backed by meaning when SUPPORTED_AT close;
    found by meaning alone, how much it `depends` on the question's words (`needs_check`) in the first
    CHECKED_HITS (further down: weak, `relevance.unchecked`); by the window alone, it answers time alone."""
    score, best, timed_words = asked
    if timed_words and hit.coverage == 0 and (c.similarity or 0.0) < MEANT_AT:
        return WEAK  # "Does he ski in winter?": a January dentist appointment is in the window, no more
    backed = hit.coverage > 0 and (c.similarity or 0.0) >= SUPPORTED_AT
    drop = None
    if depends is not None and needs_check(score, c.similarity, hit.coverage == 0):
        drop = depends.drop(hit.id, DEPENDS_AT) if at < CHECKED_HITS else unchecked()
    return band(score, best, backed, drop)
