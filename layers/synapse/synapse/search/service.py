"""Full-text search (SPEC §5): the query language, its translation to FTS5, and hydrated results.

The user's query is parsed here, never handed to FTS5 as typed: every word and phrase is re-quoted
as an FTS5 string, and only the operators we recognise (OR, AND, NOT, parentheses, a trailing `*`)
are emitted as syntax. A query whose structure does not parse (a stray OR, an unbalanced
parenthesis) is searched as its plain words; one with nothing searchable, or too large, is a 400.
So FTS5 never sees raw syntax from a client and no FTS5 error text can reach one.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import BadRequest
from synapse.core.observability import logger
from synapse.memory import store
from synapse.memory.model import Memory
from synapse.search.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, fold, restore_snippet
from synapse.search.readers import reader
from synapse.search.schema import BM25_WEIGHTS
from synapse.storage import cursor, tables

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
MAX_DEPTH = 8
MAX_OFFSET = 10_000
# Rows read past the page in the same query: a tie at the page boundary then rarely costs a second
# query, which would rank every match again (bench/search.py at 100k: p95 ratio 1.69 → 1.31).
TIE_SLACK = 10
MARKS = ("**", "**")
SNIPPET_TOKENS = 16
OPERATORS = frozenset({"OR", "AND", "NOT"})


# ---------------------------------------------------------------- the query language


@dataclass(frozen=True)
class Term:
    """A word or a phrase (its text is tokenised by FTS5 inside quotes); `prefix` for `word*`."""

    text: str
    prefix: bool = False

    def fts(self) -> str:
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")


@dataclass(frozen=True)
class Op:
    name: str  # AND, OR, NOT
    parts: tuple[Node, ...]

    def fts(self) -> str:
        return "(" + f" {self.name} ".join(p.fts() for p in self.parts) + ")"


Node = Term | Op


def _bad_query(message: str) -> BadRequest:
    return BadRequest(f"q: {message}", details=[{"field": "q", "rule": "query", "message": message}])


def _searchable(text: str) -> bool:
    """Whether FTS5's unicode61 tokenizer finds a token in it (letters and digits make tokens)."""
    return any(ch.isalnum() for ch in text)


def _clean(raw: str) -> str:
    """Control and format characters become spaces; lone surrogates (not UTF-8) are dropped."""
    out = []
    for ch in raw:
        category = unicodedata.category(ch)
        if category == "Cs":
            continue
        out.append(" " if category in {"Cc", "Cf", "Zl", "Zp"} else ch)
    return "".join(out)


def _lex(text: str) -> Iterator[tuple[str, str]]:
    """(kind, value) tokens: term, prefix, phrase, prefix-phrase, op, open, close.

    An unmatched double quote is dropped; everything between matched quotes is one phrase.
    """
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                i += 1  # unbalanced: drop the quote, read the rest as words
                continue
            star = end + 1 < n and text[end + 1] == "*"
            yield ("prefix-phrase" if star else "phrase"), text[i + 1 : end]
            i = end + (2 if star else 1)
        elif ch in "()":
            yield ("open" if ch == "(" else "close"), ch
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '"()':
                j += 1
            word = text[i:j]
            i = j
            if word in OPERATORS:
                yield "op", word
            elif word.endswith("*"):
                yield "prefix", word.rstrip("*")
            else:
                yield "term", word


class _Unparsable(Exception):
    """The query's structure is not valid: it will be searched as plain words."""


class _Parser:
    """or := and (OR and)* ; and := not ([AND] not)* ; not := unit (NOT unit)* ; unit := term | ( or )"""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def parse(self) -> Node:
        node = self.or_(0)
        if self.peek() is not None:
            raise _Unparsable
        return node

    def or_(self, depth: int) -> Node:
        parts = [self.and_(depth)]
        while self.peek() == ("op", "OR"):
            self.take()
            parts.append(self.and_(depth))
        return parts[0] if len(parts) == 1 else Op("OR", tuple(parts))

    def and_(self, depth: int) -> Node:
        parts = [self.not_(depth)]
        while (token := self.peek()) is not None and token[0] != "close" and token not in {("op", "OR")}:
            if token == ("op", "AND"):
                self.take()
            parts.append(self.not_(depth))
        return parts[0] if len(parts) == 1 else Op("AND", tuple(parts))

    def not_(self, depth: int) -> Node:
        node = self.unit(depth)
        while self.peek() == ("op", "NOT"):
            self.take()
            node = Op("NOT", (node, self.unit(depth)))
        return node

    def unit(self, depth: int) -> Node:
        token = self.peek()
        if token is None or token[0] in {"op", "close"}:
            raise _Unparsable
        self.take()
        kind, value = token
        if kind == "open":
            if depth + 1 > MAX_DEPTH:
                raise _bad_query(f"parentheses nest too deep (at most {MAX_DEPTH} levels)")
            node = self.or_(depth + 1)
            if self.peek() is None or self.take()[0] != "close":
                raise _Unparsable
            return node
        return Term(value, prefix=kind.startswith("prefix"))


def _prune(node: Node) -> Node | None:
    """Drop terms without anything to match (punctuation, emoji): FTS5 would match nothing for them."""
    if isinstance(node, Term):
        return node if _searchable(node.text) else None
    if node.name == "NOT":
        left, right = (_prune(p) for p in node.parts)
        if left is None:
            raise _Unparsable
        return left if right is None else Op("NOT", (left, right))
    parts = tuple(p for p in (_prune(p) for p in node.parts) if p is not None)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Op(node.name, parts)


def _terms(node: Node) -> int:
    return 1 if isinstance(node, Term) else sum(_terms(p) for p in node.parts)


def _plain_words(tokens: list[tuple[str, str]]) -> Node | None:
    """The fallback: every word and phrase, all required; operators and parentheses ignored."""
    terms = [
        Term(value, prefix=kind.startswith("prefix"))
        for kind, value in tokens
        if kind in {"term", "prefix", "phrase", "prefix-phrase"} and _searchable(value)
    ]
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else Op("AND", tuple(terms))


@dataclass(frozen=True)
class Query:
    """A parsed query: the FTS5 MATCH expression, and whether it was read as plain words."""

    match: str
    plain: bool


def parse_query(raw: str | None) -> Query:
    if raw is None or not raw.strip():
        raise _bad_query("required: what to search for, e.g. q=docker")
    if len(raw) > MAX_QUERY_CHARS:
        raise _bad_query(f"at most {MAX_QUERY_CHARS} characters (got {len(raw)})")
    tokens = list(_lex(fold(_clean(raw))))
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token == ("op", "NOT") and (before is None or before[0] in {"op", "open"}):
            raise _bad_query("NOT leaves out what follows from what comes before it: e.g. docker NOT swarm")
    plain = False
    try:
        node: Node | None = _prune(_Parser(tokens).parse()) if tokens else None
    except _Unparsable:
        node, plain = _plain_words(tokens), True
    if node is None:
        raise _bad_query('nothing to search for: use letters or digits, e.g. docker, "exact phrase", dock*')
    if _terms(node) > MAX_TERMS:
        raise _bad_query(f"at most {MAX_TERMS} words and phrases")
    return Query(node.fts(), plain)


# ---------------------------------------------------------------- filters and scope


@dataclass(frozen=True)
class SearchFilters:
    tag: str | None = None
    category: str | None = None
    priority: str | None = None
    include_expired: bool = False

    def keeps(self, memory: Memory, now: str) -> bool:
        """The same filters on the current record (the index may be a moment behind it)."""
        return (
            (self.tag is None or self.tag in memory.tags)
            and (self.category is None or memory.category == self.category)
            and (self.priority is None or memory.priority == self.priority)
            and (self.include_expired or memory.expires_at is None or memory.expires_at > now)
        )

    def sql(self, now: str) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if self.tag is not None:
            clauses.append("EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid)")
            params.append(self.tag)
        if self.category is not None:
            clauses.append("d.category = ?")
            params.append(self.category)
        if self.priority is not None:
            clauses.append("d.priority = ?")
            params.append(self.priority)
        if not self.include_expired:
            clauses.append("(d.expires_at IS NULL OR d.expires_at > ?)")
            params.append(now)
        return "".join(f" AND {c}" for c in clauses), params


def _scope(raw_query: str, filters: SearchFilters) -> str:
    text = json.dumps([raw_query, filters.tag, filters.category, filters.priority, filters.include_expired])
    return "search:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# ---------------------------------------------------------------- running it

_WEIGHTS = ", ".join(str(w) for w in BM25_WEIGHTS)
# FTS5 sorts by `rank` itself (no SQLite sorter; snippets are made only for the rows returned).
RANKED_SQL = (
    "SELECT fts.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, snippet(fts, -1, ?, ?, ?, ?),"
    # Where folding changed the text, a second snippet with control marks to map onto the original.
    " CASE WHEN coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NOT NULL"
    " THEN snippet(fts, -1, ?, ?, ?, ?) END, fts.raw_content, fts.raw_key, fts.raw_tags,"
    " CASE WHEN fts.raw_content IS NOT NULL THEN fts.content END,"
    " CASE WHEN fts.raw_key IS NOT NULL THEN fts.key END,"
    " CASE WHEN fts.raw_tags IS NOT NULL THEN fts.tags END"
    " FROM fts JOIN docs d ON d.rowid = fts.rowid"
    " WHERE fts MATCH ? AND fts.rank MATCH 'bm25({w})'{filters}"
    " ORDER BY fts.rank LIMIT ? OFFSET ?"
)


class Hit(NamedTuple):
    id: str
    category: str
    key: str
    score: float
    snippet: str


class _Ranked:
    """Reads rows in FTS5's order (BM25 alone) from one generation for one query."""

    def __init__(self, db: sqlite3.Connection, query: Query, filters: SearchFilters, now: str) -> None:
        where, params = filters.sql(now)
        self.db = db
        self.query = query
        self.sql = RANKED_SQL.format(w=_WEIGHTS, filters=where)
        marks = (MARK_OPEN, MARK_CLOSE, ELLIPSIS)
        self.params = [*MARKS, "…", SNIPPET_TOKENS, *marks, SNIPPET_TOKENS, query.match, *params]

    def rows(self, count: int, offset: int) -> list[Any]:
        try:
            return self.db.execute(self.sql, [*self.params, count, offset]).fetchall()
        except sqlite3.Error as error:
            # Never expected (the expression is ours); never shown to the client either.
            logger.warning(
                "FTS5 rejected a compiled query", extra={"match": self.query.match, "error": str(error)}
            )
            raise _bad_query(
                'could not be searched; use words, "exact phrases", prefix*, OR, NOT and parentheses'
            ) from None

    def through(self, start: int, end: int) -> list[Any]:
        """Rows `start` to `end` and one more, and on while they tie with row `end - 1`.

        A few rows more than needed are read in the same query (ties are common among short
        memories), since every query pays for ranking all matches again.
        """
        wanted = end - start + 1 + TIE_SLACK
        rows = self.rows(wanted, start)
        while len(rows) == wanted and rows[-1][0] == rows[end - start - 1][0]:
            more = self.rows(wanted, start + len(rows))
            rows += more
            wanted = len(rows) if len(more) == wanted else -1
        return rows


def _in_spec_order(rows: list[Any]) -> list[Any]:
    """BM25, then priority, then most recently updated (then id, so the order is total)."""
    if len({r[0] for r in rows}) == len(rows):
        return rows  # no two scores are equal: FTS5's order is the order
    rows.sort(key=lambda r: r[3])
    rows.sort(key=lambda r: r[2], reverse=True)  # stable: most recent first among equals
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


def index_hits(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Hit], bool]:
    """Hits `offset` to `offset + limit` of one generation in SPEC order, and whether more exist.

    FTS5 orders by BM25 (key and tags weigh more); equal scores are ordered here by priority and
    recency. A page is read together with the row before it and every row tying with its last one,
    so a group of equal scores split by a page boundary is read whole (from the start if needed).
    """
    ranked = _Ranked(db, query, filters, now)
    start = max(offset - 1, 0)
    rows = ranked.through(start, offset + limit)
    if offset > 0 and len(rows) > 1 and rows[0][0] == rows[1][0]:
        start, rows = 0, ranked.through(0, offset + limit)
    rows = _in_spec_order(rows)
    page = rows[offset - start : offset - start + limit]
    hits = []
    for r in page:
        snippet = r[6] or ""
        if r[7] is not None:
            snippet = restore_snippet(r[7], zip(r[11:14], r[8:11], strict=True), MARKS)
        hits.append(Hit(r[3], r[4], r[5], float(f"{-r[0]:.6g}"), snippet))
    return hits, len(rows) > offset - start + limit


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
                memory = store.memory_from_item(tables.load(raw))
                found[memory.id] = memory
            request = answer.get("UnprocessedKeys") or {}
    return found


@dataclass(frozen=True)
class Result:
    memory: Memory
    score: float
    snippet: str

    def public(self) -> dict[str, Any]:
        return {"memory": self.memory.public(), "score": self.score, "snippet": self.snippet}


@dataclass(frozen=True)
class SearchPage:
    results: list[Result] = field(default_factory=list)
    next_cursor: str | None = None

    def public(self) -> dict[str, Any]:
        return {"results": [r.public() for r in self.results], "next_cursor": self.next_cursor}


def _offset(mind_id: str, scope: str, after: str | None) -> int:
    if not after:
        return 0
    position = cursor.decode(after, mind_id, scope)
    offset = position.get("o")
    if not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise BadRequest("cursor: not a cursor this query issued; start again without it")
    return offset


def search(
    mind_id: str, raw_query: str | None, filters: SearchFilters, limit: int, after: str | None = None
) -> SearchPage:
    """One page of results. Hits come from the index; what is returned is the record as it is now.

    A hit whose memory is gone (deleted, or replaced under the same key by a new one) or no longer
    passes the filters is skipped and the next hit taken, so a page is full while hits remain.
    """
    query = parse_query(raw_query)
    scope = _scope(raw_query or "", filters)
    offset = _offset(mind_id, scope, after)
    db = reader(mind_id)
    if db is None:
        return SearchPage()
    now = clock.to_iso(clock.now())
    results: list[Result] = []
    position = offset
    more = False
    for _ in range(4):  # bounded: a badly stale index costs a few rounds, never a scan
        hits, more = index_hits(db, query, filters, limit - len(results), position, now)
        current = hydrate(mind_id, hits) if hits else {}
        for hit in hits:
            position += 1
            memory = current.get(hit.id)
            if memory is not None and filters.keeps(memory, now):
                results.append(Result(memory, hit.score, hit.snippet))
        if not more or len(results) >= limit or position >= MAX_OFFSET:
            break
    more = more and position < MAX_OFFSET
    next_cursor = cursor.encode(mind_id, scope, {"o": position}) if more else None
    return SearchPage(results, next_cursor)
