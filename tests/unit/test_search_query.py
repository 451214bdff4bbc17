"""The search query language as pure code: what a user types → the FTS5 expression we run, or a 400."""

from __future__ import annotations

import sqlite3

import pytest
from synapse.core.errors import BadRequest
from synapse.search.folding import fold
from synapse.search.query import MAX_DEPTH, MAX_QUERY_CHARS, MAX_TERMS, _parsed, parse_query


@pytest.mark.parametrize(
    ("typed", "expression"),
    [
        ("docker", '"docker"'),
        ("docker swarm", '("docker" AND "swarm")'),
        ('"exact phrase"', '"exact phrase"'),
        ("dock*", '"dock"*'),
        ('"exact phr"*', '"exact phr"*'),
        ("a OR b", '("a" OR "b")'),
        ("a AND b", '("a" AND "b")'),
        ("a NOT b", '("a" NOT "b")'),
        ("a OR b c", '("a" OR ("b" AND "c"))'),
        ("(a OR b) c", '(("a" OR "b") AND "c")'),
        ("a NOT b NOT c", '(("a" NOT "b") NOT "c")'),
        ("Schäfer", '"Schafer"'),
        ("Ёлка", '"Елка"'),
    ],
)
def test_the_supported_syntax_becomes_the_same_fts5_expression(typed: str, expression: str) -> None:
    query = parse_query(typed)
    assert query.match == expression and not query.plain


@pytest.mark.parametrize(
    ("typed", "expression"),
    [
        ("OR docker", '"docker"'),
        ("docker OR", '"docker"'),
        ("docker AND AND swarm", '("docker" AND "swarm")'),
        ("(docker", '"docker"'),
        ("docker)", '"docker"'),
        ("() docker", '"docker"'),
    ],
)
def test_a_query_whose_structure_breaks_is_searched_as_its_words(typed: str, expression: str) -> None:
    query = parse_query(typed)
    assert query.match == expression and query.plain


@pytest.mark.parametrize(
    ("typed", "expression"),
    [
        ('"unbalanced quote', '("unbalanced" AND "quote")'),
        ("NEAR(a b)", '("NEAR" AND ("a" AND "b"))'),
        ("content:secret", '"content:secret"'),
        ("^start", '"^start"'),
        ("'; DROP TABLE docs; --", '("DROP" AND "TABLE" AND "docs;")'),
        ('say "hi', '("say" AND "hi")'),
        ("🙂 docker", '"docker"'),
        ("a\x00b", '("a" AND "b")'),
        ('he said ""hi""', '("he" AND "said" AND "hi")'),
    ],
)
def test_syntax_we_do_not_offer_is_quoted_as_plain_text(typed: str, expression: str) -> None:
    assert parse_query(typed).match == expression


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        (None, "required"),
        ("", "required"),
        ("   ", "required"),
        ("*", "nothing to search for"),
        ('""', "nothing to search for"),
        ("🙂🙂", "nothing to search for"),
        ("NOT docker", "NOT"),
        ("(NOT docker)", "NOT"),
        ("a" * (MAX_QUERY_CHARS + 1), "characters"),
        (" ".join(["w"] * (MAX_TERMS + 1)), "words"),
        ("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1), "nest"),
    ],
)
def test_what_cannot_be_searched_is_a_400_that_says_why(typed: str | None, says: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse_query(typed)
    assert caught.value.message.startswith("q: ") and says in caught.value.message
    assert caught.value.details[0]["field"] == "q"


def test_every_compiled_expression_is_valid_fts5() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(key, content, tags)")
    typed = ['a "b', "a OR (b NOT c)", "x* OR y*", "NEAR(", "content:x", "((a) OR (b)) c", "a -b +c"]
    for text in typed:
        db.execute("SELECT * FROM fts WHERE fts MATCH ?", (parse_query(text).match,)).fetchall()


@pytest.mark.parametrize(
    "typed",
    [
        "docker",
        "docker swarm",
        "Schäfer café",
        "ёлка ΆΈ",
        "a1 b2 c3",
        " spaced\tout\nwords ",
        "x " * MAX_TERMS,
    ],
)
def test_plain_words_compile_as_the_full_parser_would(typed: str) -> None:
    # Given a query of plain words, which parse_query compiles without running the parser
    # When it is parsed, Then the expression is the one the full parser builds
    assert parse_query(typed) == _parsed(fold(typed))


def test_a_query_of_only_control_characters_is_a_400() -> None:
    with pytest.raises(BadRequest):
        parse_query("\x01\x02")
