"""Full-text search (SPEC §5): ranked hits from the index, returned as the records are now, in pages.

A question's time expressions are read relative to `now` in `zone` (`in_time`): a soft window."""

import hashlib
import json
import sqlite3
from datetime import UTC, datetime, tzinfo
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.moments import Window
from synapse.index import schema, vectors
from synapse.index.readers import reader
from synapse.index.schema import has_event_times
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.search import fusion, in_time
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import Query, parse_query
from synapse.search.ranking import Hit
from synapse.storage import cursor, tables
from synapse.when.window import Window as TimeWindow

MAX_OFFSET = 10_000


class Result(NamedTuple):
    memory: Memory
    score: float
    snippet: str
    matched: tuple[str, ...]  # the query's terms it matched
    coverage: float  # the share of the query's terms matched, each weighed by how informative it is
    similarity: float | None = None  # cosine to the question (None: the semantic side did not run)
    relevance: str = fusion.WEAK  # `strong` (an answer to act on) or `weak` (related at best)
    dated: bool = False  # dated in the question's time window (`in_time`); not in the answer

    def public(self) -> dict[str, Any]:
        return {
            "memory": self.memory.public(),
            "score": self.score,
            "snippet": self.snippet,
            "matched": list(self.matched),
            "coverage": self.coverage,
            "similarity": self.similarity,
            "relevance": self.relevance,
        }


class SearchPage(NamedTuple):
    results: list[Result]
    terms: list[str]  # the meaningful terms the query was read as
    next_cursor: str | None = None
    mode: str = Mode.LEXICAL.value  # how the page was ranked (hybrid asked of explicit syntax: lexical)

    def public(self) -> dict[str, Any]:
        results = [r.public() for r in self.results]
        return {"results": results, "terms": self.terms, "mode": self.mode, "next_cursor": self.next_cursor}


def hydrate(mind_id: str, hits: list[Hit]) -> dict[str, Memory]:
    """Current records for the hits (one consistent BatchGetItem per 100): deleted ones are absent."""
    found: dict[str, Memory] = {}
    keys = {(h.category, h.key) for h in hits}
    wanted = [{"pk": mind_id, "sk": tables.memory_sk(c, k)} for c, k in sorted(keys)]
    table = tables.memories_table()
    for start in range(0, len(wanted), 100):
        request: dict[str, Any] = {
            table: {"Keys": [tables.dump(k) for k in wanted[start : start + 100]], "ConsistentRead": True}
        }
        while request:
            answer = tables.client().batch_get_item(RequestItems=request)
            for raw in answer.get("Responses", {}).get(table, []):
                memory = memory_from_item(tables.load(raw))
                found[memory.id] = memory
            request = answer.get("UnprocessedKeys") or {}
    return found


def _scope(raw_query: str, filters: SearchFilters, mode: Mode = Mode.HYBRID, timed: Any = None) -> str:
    """What a cursor is bound to: the same query, filters, mode and time window, or it is refused."""
    fields: list[Any] = [raw_query, filters.tag, filters.category, filters.priority, filters.include_expired]
    if filters.window.given:
        fields.append(filters.window.scope())
    if mode is not Mode.HYBRID:
        fields.append(mode.value)
    if filters.include_superseded:
        fields.append("superseded")
    if timed is not None:
        fields.append(timed.public())
    text = json.dumps(fields)
    return "search:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _offset(mind_id: str, scope: str, after: str | None) -> int:
    if not after:
        return 0
    offset = cursor.decode(after, mind_id, scope, ("o",))["o"]
    if not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise cursor.invalid("malformed position")
    return offset


def _read_time(raw: str, mode: Mode, now: datetime, zone: tzinfo) -> tuple[Query, TimeWindow | None, Mode]:
    """The query read for time (`in_time.read`), its window, and how it is ranked: a question of
    nothing but time and function words by meaning (or, where the model does not serve, words)."""
    timed = in_time.read(raw, parse_query(raw), now, zone)
    if not timed.query.clauses and mode is Mode.HYBRID:
        mode = Mode.SEMANTIC if fusion.model_serves(timed.query, raw) else Mode.LEXICAL
    return timed.query, timed.window, mode


def _mark_dated(
    db: sqlite3.Connection, window: TimeWindow, filters: SearchFilters, now: str, results: list[Result]
) -> list[Result]:
    """The results dated in the question's window marked (`Result.dated`: recall's `q` keeps them)."""
    dated = {row.id for row in in_time.window_rows(db, window, filters, now)}
    return [r._replace(dated=r.memory.id in dated) for r in results]


def _in_index(db: sqlite3.Connection, filters: SearchFilters) -> SearchFilters:
    """The filters the index can apply: one of schema 3 (until its next batch upgrades it) holds no
    times and no replacements, so those are left to `keeps` on the current records."""
    in_index = filters
    if filters.window.given and not has_event_times(db):
        in_index = in_index._replace(window=Window())
    if not schema.has_superseded_column(db):
        in_index = in_index._replace(include_superseded=True)
    return in_index


def search(
    mind_id: str,
    raw_query: str | None,
    filters: SearchFilters,
    limit: int,
    after: str | None = None,
    mode: Mode = Mode.HYBRID,
    now: datetime | None = None,
    zone: tzinfo | None = None,
) -> SearchPage:
    """One page of results. Hits come from the index; what is returned is the record as it is now.

    A best-match query is ranked by words and meaning together (`fusion`) unless `mode` says
    otherwise; explicit syntax is lexical. A hit whose memory is gone (deleted, or replaced under
    the same key by a new one) or no longer passes the filters is skipped and the next hit taken, so
    a page is full while hits remain. The order is the query's one ranking (`fusion`): walking the
    pages with `next_cursor` returns each hit once, whatever `limit` is."""
    moment = clock.now()
    query, window, mode = _read_time(raw_query or "", mode, now or moment, zone or UTC)
    scope = _scope(raw_query or "", filters, mode, window)
    offset = _offset(mind_id, scope, after)
    db = reader(mind_id)
    if db is None:
        return SearchPage([], query.terms)
    semantic = fusion.semantic_applies(query, raw_query or "", mode)
    question = vectors.question_vector(raw_query or "") if semantic else None
    real_now = clock.to_iso(moment)  # expiry is as of the real now, whatever `now=` replays
    in_index = _in_index(db, filters)
    results: list[Result] = []
    position, more, used = offset, False, Mode.LEXICAL
    for _ in range(4):  # bounded: a badly stale index costs a few rounds, never a scan
        scored, more = fusion.hybrid_hits(
            db, query, question, in_index, limit - len(results), position, real_now, mode, window,
            raw_query or "",
        )  # fmt: skip
        current = hydrate(mind_id, [s.hit for s in scored]) if scored else {}
        for hit, similarity, score, band in scored:
            position += 1
            if similarity is not None:
                used = mode if mode is not Mode.LEXICAL else Mode.HYBRID
            memory = current.get(hit.id)
            if memory is not None and filters.keeps(memory, real_now):
                results.append(
                    Result(memory, score, hit.snippet, hit.matched, round(hit.coverage, 3), similarity, band)
                )
        if not more or len(results) >= limit or position >= MAX_OFFSET:
            break
    more = more and position < MAX_OFFSET
    if window is not None:
        results = _mark_dated(db, window, filters, real_now, results)
    next_cursor = cursor.encode(mind_id, scope, {"o": position}) if more else None
    return SearchPage(results, query.terms, next_cursor, used.value)
