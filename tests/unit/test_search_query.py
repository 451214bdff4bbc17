"""The search query language as pure code: what a user types → the FTS5 expression we run, or a 400."""

from __future__ import annotations

import sqlite3

import pytest
from synapse.core.errors import BadRequest
from synapse.index.folding import fold
from synapse.search.expressions import EXACT, STEMS, SetOp, Side
from synapse.search.query import MAX_DEPTH, MAX_QUERY_CHARS, MAX_TERMS, _parsed, parse_query
from synapse.search.weights import clause_weight


@pytest.mark.parametrize(
    ("typed", "expression"),
    [
        ("docker", '"docker"'),
        ("docker swarm", '("docker" OR "swarm")'),
        ('"exact phrase"', '"exact phrase"'),
        ("dock*", '"dock"*'),
        ('"exact phr"*', '"exact phr"*'),
        ("a OR b", '("a" OR "b")'),
        ("a AND b", '("a" AND "b")'),
        ("a NOT b", '("a" NOT "b")'),
        ("a OR b c", '(("a" OR "b") OR "c")'),
        ("a OR b AND c", '("a" OR ("b" AND "c"))'),
        ("(a AND b) c", '(("a" AND "b") OR "c")'),
        ("a NOT b NOT c", '(("a" NOT "b") NOT "c")'),
        ("+docker swarm", '"docker"'),
        ('+"flat white" oat', '"flat white"'),
        ("docker swarm NOT compose", '(("docker" OR "swarm") NOT "compose")'),
        ("Ёлка", '("Елка" OR "елк"*)'),
        ("Kaffee", '"Kaffee"'),
    ],
)
def test_the_supported_syntax_becomes_the_same_fts5_expression(typed: str, expression: str) -> None:
    query = parse_query(typed)
    assert query.match == expression and not query.plain


@pytest.mark.parametrize(
    ("typed", "terms", "required"),
    [
        ("What coffee does he drink?", ["coffee", "drink"], []),
        ("When was his daughter born?", ["daughter", "born"], []),
        ("What is the user's name?", ["name"], []),
        ("find the note about the dentist", ["note", "dentist"], []),
        ("what is the", ["what", "is", "the"], []),  # only function words: they are searched
        ("?!", None, None),
        ("the AND coffee", ["the", "coffee"], ["the", "coffee"]),  # an operator keeps them
        ("a OR b", ["a", "b"], []),
        ("+docker swarm", ["docker", "swarm"], ["docker"]),
        ('"flat white" oat milk', ["flat white", "oat", "milk"], []),
        ("dock* swarm", ["dock*", "swarm"], []),
        ("docker docker Docker", ["docker"], []),
        ("Wann wurde seine Tochter geboren?", ["tochter", "geboren"], []),
        ("Какой кофе пьёт Михаил?", ["кофе", "пьет", "михаил"], []),
        ("What hat does he wear?", ["hat", "wear"], []),  # "hat" is a German function word only
    ],
)
def test_a_question_is_read_as_its_meaningful_terms(
    typed: str, terms: list[str] | None, required: list[str] | None
) -> None:
    # Given what an agent or a person types, When it is parsed
    if terms is None:
        with pytest.raises(BadRequest):
            parse_query(typed)
        return
    query = parse_query(typed)
    # Then the clauses that coverage counts are its meaningful terms, and only + or AND require one
    assert query.terms == terms
    assert [c.label for c in query.clauses if c.required] == required


def test_german_and_russian_words_also_match_by_their_stems() -> None:
    # Given a German and a Russian question, When parsed
    german = parse_query("Wann wurde seine Tochter geboren?")
    russian = parse_query("Когда родилась дочь?")
    # Then each meaningful word also matches its Snowball stem as a prefix; function words are gone
    assert german.match == '(("Tochter" OR "tocht"*) OR ("geboren" OR "gebor"*))'
    assert '"родилась"' in russian.match and '"дочь"' in russian.match and "когда" not in russian.match


def test_a_long_plain_question_keeps_its_first_terms_instead_of_a_400() -> None:
    words = [f"word{i}" for i in range(MAX_TERMS + 10)]
    assert parse_query(" ".join(words)).terms == words[:MAX_TERMS]


@pytest.mark.parametrize(
    ("typed", "expression"),
    [
        ("OR docker", '"docker"'),
        ("docker OR", '"docker"'),
        ("docker AND AND swarm", '("docker" OR "swarm")'),
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
        ('"unbalanced quote', '("unbalanced" OR "quote")'),
        ("NEAR(a b)", '("NEAR" OR ("a" OR "b"))'),
        ("content:secret", '"content:secret"'),
        ("^start", '"start"'),
        ("'; DROP TABLE docs; --", '("DROP" OR "TABLE" OR "docs")'),
        ('say "hi', '("say" OR "hi")'),
        ("🙂 docker", '"docker"'),
        ("q\x00z", '("q" OR "z")'),
        ('he said ""hi""', '("said" OR "hi")'),
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
        (" OR ".join(f"w{i}" for i in range(MAX_TERMS + 1)), "words"),
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
    typed += ["Когда родилась дочь?", "+x y NOT z", 'What is "flat white"?', "Tochter (geboren OR Geburt)"]
    for text in typed:
        query = parse_query(text)
        for match in [query.match, *(c.match for c in query.clauses)]:
            db.execute("SELECT * FROM fts WHERE fts MATCH ?", (match,)).fetchall()


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
    assert parse_query(typed) == _parsed(fold(typed), typed)


def test_a_query_of_only_control_characters_is_a_400() -> None:
    with pytest.raises(BadRequest):
        parse_query("\x01\x02")


def test_prefixes_and_phrases_are_searched_on_the_words_as_written() -> None:
    # Given a query mixing a word, a prefix and a phrase, When parsed
    query = parse_query('docker deploy* "swarm deployment"')
    # Then the word is searched on the stems, the prefix and the phrase on the words as written
    assert [c.expr for c in query.clauses] == [
        Side(STEMS, '"docker"'),
        Side(EXACT, '"deploy"*'),
        Side(EXACT, '"swarm deployment"'),
    ]
    assert query.exact and isinstance(query.candidates, SetOp) and query.candidates.op == "UNION"
    # And on an index without them everything is on the stems, as before
    assert query.match == '("docker" OR "deploy"* OR "swarm deployment")'
    assert not parse_query("docker swarm").exact


@pytest.mark.parametrize(
    ("typed", "terms"),
    [
        ("transgender-specific", ["transgender", "specific"]),
        ("What transgender-specific care is there?", ["transgender", "specific", "care"]),
        ("state-of-the-art tools", ["state", "art", "tools"]),  # its function words dropped
        ("pros/cons", ["pros", "cons"]),
        ('"transgender-specific"', ["transgender-specific"]),  # a phrase stays one
        ("transgender-specific AND care", ["transgender-specific", "care"]),  # an operand stays one
    ],
)
def test_a_hyphenated_compound_side_by_side_is_its_words(typed: str, terms: list[str]) -> None:
    assert parse_query(typed).terms == terms


@pytest.mark.parametrize(
    ("rows", "matching", "weight"),
    [(1000, 1, 1000), (1000, 100, 1000), (1000, 500, 302), (1000, 900, 46), (1000, 1000, 1), (5, 5, 99)],
)
def test_a_clause_in_many_memories_weighs_less(rows: int, matching: int, weight: int) -> None:
    # A word in at most a tenth of the memories counts fully; a speaker's name in half of them 0.3
    assert clause_weight(rows, matching) == weight
