"""Full-text search (SPEC §5): ranked hits from the index, returned as the records are now, in pages."""

import hashlib
import json
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.search import fusion, recency, schema, vectors
from synapse.search.filters import Mode, SearchFilters
from synapse.search.query import parse_query
from synapse.search.ranking import Hit
from synapse.search.readers import reader
from synapse.storage import cursor, tables

MAX_OFFSET = 10_000


class Result(NamedTuple):
    memory: Memory
    score: float
    snippet: str
    matched: tuple[str, ...]  # the query's terms it matched
    coverage: float  # the share of the query's terms matched, each weighed by how informative it is
    similarity: float | None = None  # cosine to the question (None: the semantic side did not run)

    def public(self) -> dict[str, Any]:
        return {
            "memory": self.memory.public(),
            "score": self.score,
            "snippet": self.snippet,
            "matched": list(self.matched),
            "coverage": self.coverage,
            "similarity": self.similarity,
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


def _scope(raw_query: str, filters: SearchFilters, mode: Mode = Mode.HYBRID) -> str:
    """What a cursor is bound to: the same query, filters and mode, or it is refused."""
    fields: list[Any] = [raw_query, filters.tag, filters.category, filters.priority, filters.include_expired]
    if mode is not Mode.HYBRID:
        fields.append(mode.value)
    if filters.include_superseded:
        fields.append("superseded")
    text = json.dumps(fields)
    return "search:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _offset(mind_id: str, scope: str, after: str | None) -> int:
    if not after:
        return 0
    offset = cursor.decode(after, mind_id, scope, ("o",))["o"]
    if not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise cursor.invalid("malformed position")
    return offset


def search(
    mind_id: str,
    raw_query: str | None,
    filters: SearchFilters,
    limit: int,
    after: str | None = None,
    mode: Mode = Mode.HYBRID,
) -> SearchPage:
    """One page of results. Hits come from the index; what is returned is the record as it is now.

    A best-match query is ranked by words and meaning together (`fusion`) unless `mode` says
    otherwise; explicit syntax is lexical. A hit whose memory is gone (deleted, or replaced under
    the same key by a new one) or no longer passes the filters is skipped and the next hit taken, so
    a page is full while hits remain. Of two near-duplicates on a page, the newer comes first.
    """
    query = parse_query(raw_query)
    scope = _scope(raw_query or "", filters, mode)
    offset = _offset(mind_id, scope, after)
    db = reader(mind_id)
    if db is None:
        return SearchPage([], query.terms)
    semantic = fusion.semantic_applies(query, raw_query or "", mode)
    question = vectors.question_vector(raw_query or "") if semantic else None
    now = clock.to_iso(clock.now())
    results: list[Result] = []
    position = offset
    more = False
    used = Mode.LEXICAL
    indexed = filters if schema.has_superseded_column(db) else filters._replace(include_superseded=True)
    for _ in range(4):  # bounded: a badly stale index costs a few rounds, never a scan
        scored, more = fusion.hybrid_hits(
            db, query, question, indexed, limit - len(results), position, now, mode
        )
        hits = [s.hit for s in scored]
        current = hydrate(mind_id, hits) if hits else {}
        for hit, similarity in scored:
            position += 1
            if similarity is not None:
                used = mode if mode is not Mode.LEXICAL else Mode.HYBRID
            memory = current.get(hit.id)
            if memory is not None and filters.keeps(memory, now):
                coverage = round(hit.coverage, 3)
                results.append(Result(memory, hit.score, hit.snippet, hit.matched, coverage, similarity))
        if not more or len(results) >= limit or position >= MAX_OFFSET:
            break
    more = more and position < MAX_OFFSET
    next_cursor = cursor.encode(mind_id, scope, {"o": position}) if more else None
    if question is not None and mode is Mode.HYBRID and len(results) > 1:
        order = fusion.newer_first(
            [r.memory.id for r in results],
            [r.memory.updated_at for r in results],
            [len(r.matched) for r in results],
            [r.similarity or 0.0 for r in results],
            vectors.matrix_of(db),
        )
        results = [results[i] for i in order]
    results = recency.newer_related_first(results, vectors.matrix_of(db) if used is Mode.HYBRID else None)
    return SearchPage(results, query.terms, next_cursor, used.value)
