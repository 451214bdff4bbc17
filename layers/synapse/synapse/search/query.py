"""The search query language (docs/rules.md §5): what a user types → the FTS5 expressions we run, or a 400.

A query is read as clauses side by side, and side by side means *best match*: a memory matching any
clause is a candidate, and the ranking puts those matching more of them first (`Query.clauses`
counts them: a hit's `matched` and `coverage`). So an agent can ask in its own words ("What coffee
does he drink?"): function words (`languages`) do not decide a match (unless the query has nothing
else), and inflected forms match (the index stems English; other languages match by stem prefix).

Explicit syntax keeps its exact meaning: `"exact phrase"`, `prefix*`, `a AND b` (both), `a OR b`,
`a NOT b`, parentheses; `+word` makes a clause required; a `NOT` beside other clauses leaves its
right side out of all (`docker swarm NOT compose`). Precedence: NOT, AND, OR, side by side.

Parsed here, never handed to FTS5 as typed (words and phrases re-quoted, only our operators
emitted): a query that does not parse is searched as plain words; an empty or huge one is a 400.
"""

import re
import unicodedata
from collections.abc import Iterator
from typing import NamedTuple

from synapse.core.errors import BadRequest
from synapse.index.folding import fold
from synapse.search import languages
from synapse.search.expressions import EXACT, STEMS, Expr, Side, combine, touches_exact

MAX_QUERY_CHARS = 1000
MAX_TERMS = 32  # in an explicit structure (400 beyond); plain words keep their first MAX_TERMS clauses
MAX_DEPTH = 8
OPERATORS = frozenset({"OR", "AND", "NOT"})


class Term(NamedTuple):
    """A word or a phrase (its text is tokenised by FTS5 inside quotes); `prefix` for `word*`."""

    text: str
    prefix: bool = False
    phrase: bool = False
    required: bool = False

    @property
    def bare(self) -> bool:
        """A plain word: function words among these are dropped, and inflections expanded."""
        return not (self.prefix or self.phrase)

    def label(self) -> str:
        return self.text.lower() + ("*" if self.prefix else "")

    def _quoted(self) -> str:
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")

    def fts(self, latin: str) -> str:
        """On the stems (how every term is searched in an index without the words as written)."""
        quoted = self._quoted()
        stem = languages.stem(self.text.lower(), latin) if self.bare and self.text.isalnum() else None
        if stem == self.text.lower():
            return f'"{stem}"*'  # the word itself, and the longer words it starts
        return f'({quoted} OR "{stem}"*)' if stem else quoted

    def expr(self, latin: str) -> Expr:
        """A prefix or a phrase matches the words as written (`deploy*` finds "deployment": porter
        would make the prefix `deploi`); a word matches its stem, so its inflections match too."""
        return Side(STEMS, self.fts(latin)) if self.bare else Side(EXACT, self._quoted())

    def parts(self) -> "list[Term]":
        """A hyphenated compound's words ("transgender-specific" → transgender, specific), each a
        term of its own in best match; any other word is itself. The index splits compounds into
        their words already (unicode61), so a turn saying only "transgender" matches one part."""
        if not self.bare or self.text.isalnum():
            return [self]
        words = [w for w in _COMPOUND.split(self.text) if _searchable(w)]
        return [Term(w, required=self.required) for w in words] if len(words) > 1 else [self]


class Op(NamedTuple):
    name: str  # AND, OR, NOT, or ANY (side by side: OR to FTS5, ranked by how many parts match)
    parts: "tuple[Node, ...]"
    grouped: bool = False  # written in parentheses: kept whole

    def label(self) -> str:
        joiner = " " if self.name == "ANY" else f" {self.name} "
        inner = joiner.join(p.label() for p in self.parts)
        return f"({inner})" if self.grouped else inner

    def fts(self, latin: str) -> str:
        joiner = " OR " if self.name == "ANY" else f" {self.name} "
        return "(" + joiner.join(p.fts(latin) for p in self.parts) + ")"

    def expr(self, latin: str) -> Expr:
        return combine(self.name, [p.expr(latin) for p in self.parts])


Node = Term | Op


class Clause(NamedTuple):
    """One of the query's meaningful terms: what a hit's `matched` names and `coverage` counts."""

    label: str
    match: str  # its FTS5 expression on the stems alone (an index without the words as written)
    required: bool
    expr: Expr | None = None  # on both tables: prefixes and phrases on the words as written


class Query(NamedTuple):
    """A parsed query: the FTS5 expression of its candidates, and the clauses ranking counts.

    `match` and each clause's `match` search the stems alone; `candidates` and each clause's `expr`
    search prefixes and phrases on the words as written, which a generation from before schema 3
    lacks (`exact`: whether the query has any). Ranking uses the latter where the generation can.
    """

    match: str
    clauses: tuple[Clause, ...]
    plain: bool = False  # its structure did not parse: read as its plain words
    candidates: Expr | None = None
    exact: bool = False
    explicit: bool = False  # phrases, prefix*, operators or +required: exact meaning, lexical only
    latin: str = "english"  # the language of its Latin-script words (`languages.latin_language`)

    @property
    def terms(self) -> list[str]:
        return [c.label for c in self.clauses]

    @property
    def by_coverage(self) -> bool:
        """Whether candidates can differ in how many clauses they match (else all match all)."""
        return len(self.clauses) > 1 and not all(c.required for c in self.clauses)


def bad_query(message: str) -> BadRequest:
    return BadRequest(f"q: {message}", details=[{"field": "q", "rule": "query", "message": message}])


_ALNUM = re.compile(r"[^\W_]")  # exactly the characters str.isalnum() accepts
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")
_POSSESSIVE = re.compile("['\u2019](s)?$", re.IGNORECASE)
_APOSTROPHES = str.maketrans("", "", "'\u2019")
# What joins the words of a compound: hyphens (ASCII and Unicode's hyphen, non-breaking hyphen,
# figure and en dashes) and the slash ("pros/cons").
_COMPOUND = re.compile("[-/\u2010\u2011\u2012\u2013]+")


def _searchable(text: str) -> bool:
    """Whether FTS5's unicode61 tokenizer finds a token in it (letters and digits make tokens)."""
    return _ALNUM.search(text) is not None


def _word(text: str) -> str:
    """A typed word as a term: edge punctuation and a possessive off ("user's?" → "user")."""
    return _EDGES.sub("", _POSSESSIVE.sub("", _EDGES.sub("", text))) or text


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
    required: bool = False


# A phrase between matched quotes (and its `*`), an unmatched quote (dropped), a parenthesis, a word.
# `\s` is exactly `str.isspace` on str patterns.
_TOKENS = re.compile(r'(\+?)"([^"]*)"(\*?)|(")|([()])|([^\s"()]+)')


def _lex(text: str) -> Iterator[Token]:
    """The query's tokens.

    An unmatched double quote is dropped; everything between matched quotes is one phrase; a
    leading `+` makes a word or phrase required.
    """
    for plus, phrase, star, _quote, paren, word in _TOKENS.findall(text):
        if paren:
            yield Token("open" if paren == "(" else "close", paren)
        elif word:
            required = word.startswith("+") and len(word) > 1
            word = word[1:] if required else word
            if word in OPERATORS:
                yield Token("op", word)
            elif word.endswith("*"):
                yield Token("prefix", word.rstrip("*"), required)
            else:
                yield Token("term", _word(word), required)
        elif star or phrase or not _quote:
            yield Token("prefix-phrase" if star else "phrase", phrase, bool(plus))


def _term(token: Token) -> Term:
    return Term(token.text, token.kind.startswith("prefix"), "phrase" in token.kind, token.required)


class _Unparsable(Exception):
    """The query's structure is not valid: it will be searched as plain words."""


_END = Token("end", "")
_OR, _AND, _NOT = Token("op", "OR"), Token("op", "AND"), Token("op", "NOT")


class _Parser:
    """any := or+ ; or := and (OR and)* ; and := not (AND not)* ; not := unit (NOT unit)* ;
    unit := term | ( any )"""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = [*tokens, _END]  # a sentinel: looking ahead needs no bounds check
        self.at = 0

    def parse(self) -> Node:
        node = self.any_(0)
        if self.tokens[self.at] is not _END:
            raise _Unparsable
        return node

    def any_(self, depth: int) -> Node:
        """Clauses side by side; a `NOT` among them leaves its right side out of all of them."""
        parts: list[Node] = [self.or_(depth)]
        while self.tokens[self.at].kind not in {"end", "close"}:
            parts.append(self.or_(depth))
        if len(parts) == 1:
            return parts[0]
        kept: list[Node] = []
        left_out: list[Node] = []
        for part in parts:
            while isinstance(part, Op) and part.name == "NOT" and not part.grouped:
                left_out.append(part.parts[1])
                part = part.parts[0]
            kept.append(part)
        left_out.reverse()  # each part's own NOTs were peeled outermost first
        node: Node = kept[0] if len(kept) == 1 else Op("ANY", tuple(kept))
        for excluded in left_out:
            node = Op("NOT", (node, excluded))
        return node

    def or_(self, depth: int) -> Node:
        parts = [self.and_(depth)]
        while self.tokens[self.at] == _OR:
            self.at += 1
            parts.append(self.and_(depth))
        return parts[0] if len(parts) == 1 else Op("OR", tuple(parts))

    def and_(self, depth: int) -> Node:
        parts = [self.not_(depth)]
        while self.tokens[self.at] == _AND:
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
        token = self.tokens[self.at]
        if token.kind in {"op", "close", "end"}:
            raise _Unparsable
        self.at += 1
        if token.kind == "open":
            if depth + 1 > MAX_DEPTH:
                raise bad_query(f"parentheses nest too deep (at most {MAX_DEPTH} levels)")
            node = self.any_(depth + 1)
            if self.tokens[self.at].kind != "close":
                raise _Unparsable
            self.at += 1
            return node._replace(grouped=True) if isinstance(node, Op) else node
        return _term(token)


def _prune(node: Node) -> Node | None:
    """Drop terms without anything to match (punctuation, emoji): FTS5 would match nothing for them."""
    if isinstance(node, Term):
        return node if _searchable(node.text) else None
    if node.name == "NOT":
        left, right = (_prune(p) for p in node.parts)
        if left is None:
            raise _Unparsable
        return left if right is None else node._replace(parts=(left, right))
    parts = tuple(p for p in (_prune(p) for p in node.parts) if p is not None)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else node._replace(parts=parts)


def _terms(node: Node) -> int:
    return 1 if isinstance(node, Term) else sum(_terms(p) for p in node.parts)


def _plain_words(tokens: list[Token]) -> Node | None:
    """The fallback: every word and phrase side by side; operators and parentheses ignored."""
    terms = [_term(t) for t in tokens if t.kind not in {"op", "open", "close"} and _searchable(t.text)]
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else Op("ANY", tuple(terms))


def _stop_word(node: Node, latin: str) -> bool:
    return (
        isinstance(node, Term)
        and node.bare
        and not node.required
        and languages.is_stop_word(node.text.lower().translate(_APOSTROPHES), latin)
    )


def _words(node: Node) -> Iterator[str]:
    if isinstance(node, Term):
        if node.bare:
            yield from (p.text.lower().translate(_APOSTROPHES) for p in node.parts())
    else:
        for part in node.parts:
            yield from _words(part)


def _compiled(node: Node, raw: str, plain: bool, explicit: bool) -> Query:
    """The candidates' expression and the clauses, from the parsed query."""
    latin = languages.latin_language(list(_words(node)), raw)
    left_out: list[Node] = []
    while isinstance(node, Op) and node.name == "NOT" and not node.grouped:
        left_out.append(node.parts[1])
        node = node.parts[0]
    top = node.name if isinstance(node, Op) and not node.grouped else None
    parts: list[Node] = list(node.parts) if isinstance(node, Op) and top in {"ANY", "OR", "AND"} else [node]
    if top in {None, "ANY"}:  # side by side: a compound's words are clauses of their own
        parts = [w for p in parts for w in (p.parts() if isinstance(p, Term) else [p])]
        top = "ANY" if len(parts) > 1 else top
    every_part_required = top == "AND"
    # Function words side by side are dropped (unless nothing else is left); an operator keeps them.
    meaningful = ([p for p in parts if not _stop_word(p, latin)] if top == "ANY" else parts) or parts
    clauses: dict[str, Clause] = {}
    for part in meaningful:
        is_required = every_part_required or (isinstance(part, Term) and part.required)
        clause = Clause(part.label(), part.fts(latin), is_required, part.expr(latin))
        clauses.setdefault(clause.label, clause)
    kept = list(clauses.values())
    if not explicit:
        kept = kept[:MAX_TERMS]
    # Required clauses decide the candidates (the optional ones only rank them); else any clause does.
    required = [c for c in kept if c.required]
    deciding = required or kept
    joiner = "AND" if required else "OR"
    match = deciding[0].match if len(deciding) == 1 else f"({f' {joiner} '.join(c.match for c in deciding)})"
    candidates = combine(joiner, [c.expr for c in deciding if c.expr is not None])
    for excluded in reversed(left_out):  # peeled outermost first
        match = f"({match} NOT {excluded.fts(latin)})"
        candidates = combine("NOT", [candidates, excluded.expr(latin)])
    return Query(
        match, tuple(kept), plain, candidates, touches_exact(candidates), explicit and not plain, latin
    )


def parse_query(raw: str | None) -> Query:
    if raw is None or not raw.strip():
        raise bad_query("required: what to search for, e.g. q=docker")
    if len(raw) > MAX_QUERY_CHARS:
        raise bad_query(f"at most {MAX_QUERY_CHARS} characters (got {len(raw)})")
    cleaned = _clean(raw)
    text = fold(cleaned)
    words = text.split()
    if words and all(w.isalnum() for w in words) and OPERATORS.isdisjoint(words):
        # Plain words, the usual query: what the parser would build, without running it.
        terms = [Term(w) for w in words]
        return _compiled(terms[0] if len(terms) == 1 else Op("ANY", tuple(terms)), cleaned, False, False)
    return _parsed(text, cleaned)


def _parsed(text: str, raw: str) -> Query:
    """The query parsed in full (any shape); `text` is cleaned and folded, `raw` only cleaned."""
    tokens = list(_lex(text))
    if not tokens:
        raise bad_query('nothing to search for: use letters or digits, e.g. docker, "exact phrase", dock*')
    for at, token in enumerate(tokens):
        if token == ("op", "NOT", False) and (at == 0 or tokens[at - 1].kind in {"op", "open"}):
            raise bad_query("NOT leaves out what follows from what comes before it: e.g. docker NOT swarm")
    plain = False
    try:
        node: Node | None = _prune(_Parser(tokens).parse())
    except _Unparsable:
        node, plain = _plain_words(tokens), True
    if node is None:
        raise bad_query('nothing to search for: use letters or digits, e.g. docker, "exact phrase", dock*')
    explicit = any(t.kind != "term" or t.required for t in tokens)
    if explicit and _terms(node) > MAX_TERMS:
        raise bad_query(f"at most {MAX_TERMS} words and phrases")
    return _compiled(node, raw, plain, explicit)
