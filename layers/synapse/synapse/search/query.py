"""The search query language (SPEC §5): what a user types → an FTS5 MATCH expression, or a 400.

The user's query is parsed here, never handed to FTS5 as typed: every word and phrase is re-quoted
as an FTS5 string, and only the operators we recognise (OR, AND, NOT, parentheses, a trailing `*`)
are emitted as syntax. A query whose structure does not parse (a stray OR, an unbalanced
parenthesis) is searched as its plain words; one with nothing searchable, or too large, is a 400.
So FTS5 never sees raw syntax from a client and no FTS5 error text can reach one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import NamedTuple

from synapse.core.errors import BadRequest
from synapse.search.folding import fold

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32
MAX_DEPTH = 8
OPERATORS = frozenset({"OR", "AND", "NOT"})


class Term(NamedTuple):
    """A word or a phrase (its text is tokenised by FTS5 inside quotes); `prefix` for `word*`."""

    text: str
    prefix: bool = False

    def fts(self) -> str:
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")


class Op(NamedTuple):
    name: str  # AND, OR, NOT
    parts: tuple[Node, ...]

    def fts(self) -> str:
        return "(" + f" {self.name} ".join(p.fts() for p in self.parts) + ")"


Node = Term | Op


def bad_query(message: str) -> BadRequest:
    return BadRequest(f"q: {message}", details=[{"field": "q", "rule": "query", "message": message}])


_ALNUM = re.compile(r"[^\W_]")  # exactly the characters str.isalnum() accepts


def _searchable(text: str) -> bool:
    """Whether FTS5's unicode61 tokenizer finds a token in it (letters and digits make tokens)."""
    return _ALNUM.search(text) is not None


def _clean(raw: str) -> str:
    """Control and format characters become spaces; lone surrogates (not UTF-8) are dropped."""
    if raw.isascii():
        return raw  # ASCII has no format characters, and `fold` turns its controls into spaces
    out = []
    for ch in raw:
        category = unicodedata.category(ch)
        if category == "Cs":
            continue
        out.append(" " if category in {"Cc", "Cf", "Zl", "Zp"} else ch)
    return "".join(out)


class Token(NamedTuple):
    kind: str  # term, prefix, phrase, prefix-phrase, op, open, close
    text: str


# A phrase between matched quotes (and its `*`), an unmatched quote (dropped), a parenthesis, a word.
# `\s` is exactly `str.isspace` on str patterns.
_TOKENS = re.compile(r'"([^"]*)"(\*?)|(")|([()])|([^\s"()]+)')


def _lex(text: str) -> Iterator[Token]:
    """The query's tokens.

    An unmatched double quote is dropped; everything between matched quotes is one phrase.
    """
    for phrase, star, _quote, paren, word in _TOKENS.findall(text):
        if paren:
            yield Token("open" if paren == "(" else "close", paren)
        elif word:
            if word in OPERATORS:
                yield Token("op", word)
            elif word.endswith("*"):
                yield Token("prefix", word.rstrip("*"))
            else:
                yield Token("term", word)
        elif star or phrase or not _quote:
            yield Token("prefix-phrase" if star else "phrase", phrase)


class _Unparsable(Exception):
    """The query's structure is not valid: it will be searched as plain words."""


_END = Token("end", "")
_OR, _AND, _NOT = Token("op", "OR"), Token("op", "AND"), Token("op", "NOT")


class _Parser:
    """or := and (OR and)* ; and := not ([AND] not)* ; not := unit (NOT unit)* ; unit := term | ( or )"""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = [*tokens, _END]  # a sentinel: looking ahead needs no bounds check
        self.at = 0

    def parse(self) -> Node:
        node = self.or_(0)
        if self.tokens[self.at] is not _END:
            raise _Unparsable
        return node

    def or_(self, depth: int) -> Node:
        parts = [self.and_(depth)]
        while self.tokens[self.at] == _OR:
            self.at += 1
            parts.append(self.and_(depth))
        return parts[0] if len(parts) == 1 else Op("OR", tuple(parts))

    def and_(self, depth: int) -> Node:
        parts = [self.not_(depth)]
        while (token := self.tokens[self.at]).kind not in {"end", "close"} and token != _OR:
            if token == _AND:
                self.at += 1
            parts.append(self.not_(depth))
        return parts[0] if len(parts) == 1 else Op("AND", tuple(parts))

    def not_(self, depth: int) -> Node:
        node = self.unit(depth)
        while self.tokens[self.at] == _NOT:
            self.at += 1
            node = Op("NOT", (node, self.unit(depth)))
        return node

    def unit(self, depth: int) -> Node:
        kind, text = self.tokens[self.at]
        if kind in {"op", "close", "end"}:
            raise _Unparsable
        self.at += 1
        if kind == "open":
            if depth + 1 > MAX_DEPTH:
                raise bad_query(f"parentheses nest too deep (at most {MAX_DEPTH} levels)")
            node = self.or_(depth + 1)
            if self.tokens[self.at].kind != "close":
                raise _Unparsable
            self.at += 1
            return node
        return Term(text, kind.startswith("prefix"))


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


def _plain_words(tokens: list[Token]) -> Node | None:
    """The fallback: every word and phrase, all required; operators and parentheses ignored."""
    terms = [
        Term(token.text, prefix=token.kind.startswith("prefix"))
        for token in tokens
        if token.kind in {"term", "prefix", "phrase", "prefix-phrase"} and _searchable(token.text)
    ]
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else Op("AND", tuple(terms))


class Query(NamedTuple):
    """A parsed query: the FTS5 MATCH expression, and whether it was read as plain words."""

    match: str
    plain: bool


def parse_query(raw: str | None) -> Query:
    if raw is None or not raw.strip():
        raise bad_query("required: what to search for, e.g. q=docker")
    if len(raw) > MAX_QUERY_CHARS:
        raise bad_query(f"at most {MAX_QUERY_CHARS} characters (got {len(raw)})")
    text = fold(_clean(raw))
    words = text.split()
    if words and len(words) <= MAX_TERMS and all(w.isalnum() for w in words) and OPERATORS.isdisjoint(words):
        # Plain words, the usual query: what the parser would build, without building it.
        terms = [f'"{w}"' for w in words]
        return Query(terms[0] if len(terms) == 1 else "(" + " AND ".join(terms) + ")", False)
    return _parsed(text)


def _parsed(text: str) -> Query:
    """The query parsed in full (any shape); `text` is cleaned and folded."""
    tokens = list(_lex(text))
    if not tokens:
        raise bad_query('nothing to search for: use letters or digits, e.g. docker, "exact phrase", dock*')
    for at, token in enumerate(tokens):
        if token == ("op", "NOT") and (at == 0 or tokens[at - 1].kind in {"op", "open"}):
            raise bad_query("NOT leaves out what follows from what comes before it: e.g. docker NOT swarm")
    plain = False
    try:
        node: Node | None = _prune(_Parser(tokens).parse()) if tokens else None
    except _Unparsable:
        node, plain = _plain_words(tokens), True
    if node is None:
        raise bad_query('nothing to search for: use letters or digits, e.g. docker, "exact phrase", dock*')
    if _terms(node) > MAX_TERMS:
        raise bad_query(f"at most {MAX_TERMS} words and phrases")
    return Query(node.fts(), plain)
