"""Hybrid ranking of a best-match query: the lexical ranking, with meaning to break ties and rescue.

Both sides are read from one generation: the lexical candidates (`ranking.coverage_rows`: coverage
then BM25, the first POOL, without snippets) and the cosine similarity of the question to every
memory's vector (`vectors.Matrix`, exact dot products). Then

    a lexical hit:        coverage' + BM25_WEIGHT x score / best score + SEMANTIC_WEIGHT x lift(sim)
                          (coverage' = coverage, x UNSUPPORTED when lift(sim) = 0)
    found by meaning:     RESCUE_WEIGHT x lift(sim) x (1 - closing coverage) ** RESCUE_FADE
    lift(s) = max(0, s - SIMILARITY_FLOOR) / (1 - SIMILARITY_FLOOR)
    closing coverage: the best coverage of a lexical hit with lift > 0 and a similarity at least
                      sim - CLOSING_MARGIN

Meaning breaks ties between lexical hits of like evidence, and rescues what lexical search misses
(never under the floor: what unrelated texts share) as far as the words left the question open: a
conversation log's names and exact words keep their places, a paraphrase's answer is not buried
under memories that share a word with the question but not its meaning. Equal-weight reciprocal
rank fusion was not used: it lets a memory merely near the topic outrank one holding the
question's names and words, and on conversation logs it does worse than lexical search alone. The
constants were chosen on held-out question sets (bench/meaning.py, docs/search.md). Two rules
hold whatever the scores:

- a lexical exact hit (matching every meaningful term of the query) that lexical search puts on
  the first page stays on the first page: meaning may reorder the page, never push it off;
- of two near-duplicate hits (cosine >= DUPLICATE_SIMILARITY) matching as many of the query's
  terms and about as close to the question (within AS_CLOSE), the more recently updated ranks
  first (`newer_first`: a stale fact and its correction).

The semantic side is off (hybrid is lexical) for explicit syntax and for a query the model does not
serve (another language: `synapse.embedding.serves`).
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Any, NamedTuple

from synapse.search import in_time, vectors
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import Query
from synapse.search.ranking import Hit, coverage_of, coverage_rows, hits_of, index_hits
from synapse.when.grammar import Window

POOL = 50  # candidates taken from each side (a page beyond it widens the pool)
BM25_WEIGHT = 0.1
SEMANTIC_WEIGHT = 1.0
RESCUE_WEIGHT = 3.0
SIMILARITY_FLOOR = 0.2
# How fast a rescue fades as lexical search covers more of the question: (1 - best coverage) ** this.
RESCUE_FADE = 2.0
# A lexical hit at least this close to the question in meaning closes it for the memories meaning
# alone finds (those no closer than it by more than CLOSING_MARGIN); one below SIMILARITY_FLOOR is
# about something else ("go" to bed / "Go and Postgres"): its coverage counts UNSUPPORTED of itself.
CLOSING_MARGIN = 0.05
UNSUPPORTED = 0.5
DUPLICATE_SIMILARITY = vectors.REPEAT_SIMILARITY
# A correction answers the question about as well as the fact it corrects ("which car does he
# drive?": 0.465 to `car` "Drives a 2019 Tesla…", 0.379 to `new_car` "Drives a 2024 BMW i4 now…");
# two turns of one conversation on a topic are near each other too, but the one that answers is
# clearly closer to the question (0.69 against 0.57, 0.75 against 0.48: bench/data/conversation.json).
AS_CLOSE = 0.1
SNIPPET_CHARS = 120


class Scored(NamedTuple):
    """A hit with its semantic similarity to the query (None: the semantic side did not run)."""

    hit: Hit
    similarity: float | None


def model_serves(query: Query, raw: str) -> bool:
    """Whether the model understands the query: English, by its function words and letters."""
    return query.latin == "english" and vectors.serves(raw)


def semantic_applies(query: Query, raw: str, mode: Mode) -> bool:
    """Explicit syntax stays lexical; a best-match query gets meaning unless asked for words only, or
    in a language the model does not serve (asked for meaning alone, it is given it anyway)."""
    if query.explicit or mode is Mode.LEXICAL:
        return False
    return mode is Mode.SEMANTIC or model_serves(query, raw)


_DOCS_SQL = (
    "SELECT d.rowid, d.id, d.category, d.key FROM docs d"
    " WHERE d.deleted = 0 AND d.rowid IN ({marks}){filters}"
)
_CONTENT_SQL = "SELECT rowid, coalesce(raw_content, content) FROM fts WHERE rowid IN ({marks})"


def _snippet(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"


class _Row(NamedTuple):
    """A candidate as read before the page is known (no snippet yet)."""

    rowid: int
    id: str
    category: str
    key: str
    score: float  # BM25, higher is better (0 for a semantic-only candidate)
    mask: int  # the query's clauses it matched
    lexical: Any  # its `ranking.coverage_rows` row (None: found by meaning only)


def _semantic_rows(
    db: sqlite3.Connection, matrix: vectors.Matrix, sims: Any, filters: SearchFilters, wanted: int, now: str
) -> list[tuple[_Row, float]]:
    """The `wanted` most similar memories passing the filters, most similar first."""
    import numpy as np

    if not len(sims):
        return []
    take = min(len(sims), wanted * (8 if filters.narrowed else 2))
    where, params = filters.sql(now)
    while True:
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        rowids = [int(r) for r in matrix.rowids[top]]
        sql = _DOCS_SQL.format(marks=", ".join("?" * len(rowids)), filters=where)
        rows = {row[0]: row for row in db.execute(sql, [*rowids, *params])}
        found = [
            (_Row(r, rows[r][1], rows[r][2], rows[r][3], 0.0, 0, None), float(sims[i]))
            for r, i in zip(rowids, top, strict=True)
            if r in rows
        ]
        if len(found) >= wanted or take >= len(sims):
            return found[:wanted]
        take = min(len(sims), take * 4)


def _page_hits(db: sqlite3.Connection, query: Query, page: list[_Row], weights: list[int]) -> list[Hit]:
    """The page's hits with their snippets: the lexical ones marked as lexical search marks them,
    the others the start of their content."""
    found = [r.lexical for r in page if r.lexical is not None]
    lexical = {hit.id: hit for hit in hits_of(db, query, found, weights)}
    others = [r.rowid for r in page if r.lexical is None]
    contents: dict[int, str] = {}
    if others:
        sql = _CONTENT_SQL.format(marks=", ".join("?" * len(others)))
        contents = dict(db.execute(sql, others).fetchall())
    return [
        lexical[r.id]
        if r.id in lexical
        else Hit(r.id, r.category, r.key, 0.0, _snippet(contents.get(r.rowid, "")), (), 0.0)
        for r in page
    ]


def lift(similarity: float) -> float:
    return max(0.0, similarity - SIMILARITY_FLOOR) / (1.0 - SIMILARITY_FLOOR)


def fused_score(coverage: float, bm25: float, similarity: float) -> float:
    """A lexical hit's: `bm25` is its BM25 score over the best of the candidates; meaning breaks
    ties between hits of similar lexical evidence (SEMANTIC_WEIGHT)."""
    return coverage + BM25_WEIGHT * bm25 + SEMANTIC_WEIGHT * lift(similarity)


def rescued_score(similarity: float, closing_coverage: float) -> float:
    """A memory lexical search did not find (in its first POOL): meaning alone (RESCUE_WEIGHT), as
    far as the words left the question open. `closing_coverage` is the best coverage of the lexical
    hits about as close to the question in meaning (CLOSING_MARGIN): when lexical search matched
    the question's informative words in such a memory, the answer is most likely there (names,
    exact words in a log); when it matched little, or only in memories further from the question
    than this one, meaning is the better witness (a paraphrase shares no word)."""
    return float(RESCUE_WEIGHT * lift(similarity) * (1.0 - closing_coverage) ** RESCUE_FADE)


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


class _Candidate(NamedTuple):
    fused: float
    lexical_at: int  # position in the lexical ranking (POOL + for semantic-only ones)
    row: _Row
    similarity: float
    exact: bool  # every meaningful term matched


def _keep_exact_on_first_page(ranked: list[_Candidate], page: int) -> list[_Candidate]:
    """The exact lexical hits of lexical's first page keep a place on the first page: others fill
    the page only while room is left for those still to come (the rest keeps its order)."""
    protected = {c.row.id for c in ranked if c.exact and c.lexical_at < page}
    first: list[_Candidate] = []
    waiting = len(protected)
    for candidate in ranked:
        if len(first) == page:
            break
        if candidate.row.id in protected:
            first.append(candidate)
            waiting -= 1
        elif page - len(first) > waiting:
            first.append(candidate)
    placed = {c.row.id for c in first}
    return first + [c for c in ranked if c.row.id not in placed]


def newer_first(
    ids: list[str],
    updated: list[str],
    matched: list[int],
    similarity: list[float],
    matrix: vectors.Matrix | None,
) -> list[int]:
    """The order of a page's hits (indexes into `ids`) once, of two near-duplicates (cosine >=
    DUPLICATE_SIMILARITY) that match as many of the query's terms (`matched`) and are about as close
    to the question (`similarity`, AS_CLOSE), the more recently updated has taken the better of
    their two places: a fact and its correction, not two turns of a conversation of which one holds
    more of what was asked."""
    order = list(range(len(ids)))
    if matrix is None or len(ids) < 2:
        return order
    rows = [matrix.row_of(i) for i in ids]
    present = [i for i, r in enumerate(rows) if r is not None]
    if len(present) < 2:
        return order
    block = matrix.vectors[[rows[i] for i in present]]
    close = (block @ block.T) >= DUPLICATE_SIMILARITY
    in_block = {hit: at for at, hit in enumerate(present)}
    for a in range(len(order)):
        for b in range(a + 1, len(order)):
            first, second = order[a], order[b]
            if first not in in_block or second not in in_block:
                continue
            same_evidence = (
                matched[first] == matched[second] and similarity[second] >= similarity[first] - AS_CLOSE
            )
            if (
                same_evidence
                and close[in_block[first], in_block[second]]
                and updated[second] > updated[first]
            ):
                order[a], order[b] = second, first
    return order


def _favour_window(
    db: sqlite3.Connection,
    window: Window,
    filters: SearchFilters,
    now: str,
    candidates: dict[str, _Candidate],
    meaning: tuple[vectors.Matrix, Any, Callable[[float], float]],
    after_pool: int,
) -> None:
    """The memories dated in the question's `window` become candidates (scored by `meaning`: the
    matrix, the question's similarities, the score a similarity gives) and every candidate's score
    counts the window (`in_time.favoured`)."""
    matrix, sims, score = meaning
    inside = set()
    for rowid, memory_id, category, key, _ in in_time.window_rows(db, window, filters, now):
        inside.add(memory_id)
        if memory_id not in candidates:
            row_at = matrix.row_of(memory_id)
            similarity = 0.0 if row_at is None else float(sims[row_at])
            row = _Row(rowid, memory_id, category, key, 0.0, 0, None)
            candidates[memory_id] = _Candidate(score(similarity), after_pool, row, similarity, False)
    for memory_id, candidate in candidates.items():
        candidates[memory_id] = candidate._replace(
            fused=in_time.favoured(candidate.fused, memory_id in inside)
        )


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
) -> tuple[list[Scored], bool]:
    """Hits `offset` to `offset + limit` fused as the module says (`question`: the query's vector;
    None, or a generation without vectors, gives the lexical ranking); `window`: `_favour_window`."""
    matrix = vectors.matrix_of(db) if question is not None else None
    if matrix is None or question is None or not len(matrix.rowids):
        return _lexical(db, query, filters, limit, offset, now, window)
    pool = max(POOL, offset + limit + 1)
    sims = matrix.similarities(question)
    lexical, weights = (
        coverage_rows(db, query, filters, pool, 0, now) if mode is not Mode.SEMANTIC else ([], [])
    )
    clauses = max(1, len(query.clauses))
    best = max((-row[0] for row in lexical), default=0.0) or 1.0
    at_rows = [matrix.row_of(found[3]) for found in lexical]
    lexical_sims = sims[[0 if r is None else r for r in at_rows]].tolist() if lexical else []
    coverages: dict[int, float] = {}  # by mask: the pool's hits share a few
    supported: list[tuple[float, float]] = []  # the lexical hits' (similarity, coverage) over the floor
    candidates: dict[str, _Candidate] = {}
    for at, found in enumerate(lexical):
        row = _Row(found[6], found[3], found[4], found[5], -found[0], found[7], found)
        similarity = 0.0 if at_rows[at] is None else lexical_sims[at]
        coverage = coverages.get(row.mask)
        if coverage is None:
            coverage = coverages[row.mask] = coverage_of(weights, row.mask)
        if lift(similarity) > 0:
            supported.append((similarity, coverage))
        else:
            coverage *= UNSUPPORTED
        fused = fused_score(coverage, max(row.score, 0.0) / best, similarity)
        candidates[row.id] = _Candidate(fused, at, row, similarity, row.mask.bit_count() == clauses)
    closing = _closing_coverage(supported)
    for row, similarity in _semantic_rows(db, matrix, sims, filters, pool, now):
        if row.id not in candidates and (mode is Mode.SEMANTIC or lift(similarity) > 0):
            fused = similarity if mode is Mode.SEMANTIC else rescued_score(similarity, closing(similarity))
            candidates[row.id] = _Candidate(fused, pool + 1, row, similarity, False)
    if window is not None:  # the question's time (search.in_time): its memories join, and rank up
        rescue = (lambda s: s) if mode is Mode.SEMANTIC else (lambda s: rescued_score(s, closing(s)))
        _favour_window(db, window, filters, now, candidates, (matrix, sims, rescue), pool + 1)
    if mode is Mode.SEMANTIC:  # fused is the similarity (and the window's favour)
        ranked = sorted(candidates.values(), key=lambda c: (-c.fused, -c.similarity, c.row.id))
    else:
        ranked = sorted(candidates.values(), key=lambda c: (-c.fused, c.lexical_at, -c.similarity, c.row.id))
        ranked = _keep_exact_on_first_page(ranked, limit)
    page = ranked[offset : offset + limit]
    hits = _page_hits(db, query, [c.row for c in page], weights)
    return [Scored(h, round(c.similarity, 4)) for h, c in zip(hits, page, strict=True)], len(
        ranked
    ) > offset + limit


def _lexical(
    db: sqlite3.Connection,
    query: Query,
    filters: SearchFilters,
    limit: int,
    offset: int,
    now: str,
    window: Window | None,
) -> tuple[list[Scored], bool]:
    """The lexical ranking; with the question's window, the first POOL lexical hits (by coverage;
    none when the question is only time and function words: `query.clauses` empty) and the window's
    memories, re-ranked by coverage favoured as `in_time` says, then paged."""
    if window is None:
        hits, more = index_hits(db, query, filters, limit, offset, now)
        return [Scored(h, None) for h in hits], more
    pool = max(POOL, offset + limit + 1)
    hits = index_hits(db, query, filters, pool, 0, now)[0] if query.clauses else []
    found = {hit.id for hit in hits}
    dated = in_time.window_rows(db, window, filters, now)
    inside = {row.id for row in dated}
    joined = [_Row(r, i, c, k, 0.0, 0, None) for r, i, c, k, _ in dated if i not in found]
    every = [*hits, *(_page_hits(db, query, joined, []) if joined else [])]
    order = sorted(
        range(len(every)), key=lambda n: (-in_time.favoured(every[n].coverage, every[n].id in inside), n)
    )
    page = [every[n] for n in order[offset : offset + limit]]
    return [Scored(hit, None) for hit in page], len(every) > offset + limit
