"""Which column a snippet comes from (`search.snippets`): the content's words first."""

from __future__ import annotations

import sqlite3

from synapse.index.folding import MARK_CLOSE, MARK_OPEN
from synapse.search.snippets import COLUMN_BREAK, chosen, snippets_sql


def cut(content: str, tags: str, key: str) -> str:
    return COLUMN_BREAK.join((content, tags, key))


def hit(word: str) -> str:
    return f"{MARK_OPEN}{word}{MARK_CLOSE}"


def test_the_content_wins_whenever_it_holds_a_hit() -> None:
    # Given a row whose key and tags also hold the hit (a key derived from the content's first words)
    row = cut(f"{hit('Works')} at a standing desk", hit("works"), f"{hit('works')}_standing_desk_8e8569")
    # Then the snippet is the content's
    assert chosen(row) == f"{hit('Works')} at a standing desk"


def test_the_tags_then_the_key_only_when_the_content_has_no_hit() -> None:
    assert chosen(cut("Upstairs, by the window", hit("works"), f"{hit('works')}_room")) == hit("works")
    assert chosen(cut("Meets every Tuesday", "", f"{hit('works')}_council")) == f"{hit('works')}_council"
    # And with no hit anywhere, the start of the content
    assert chosen(cut("Meets every Tuesday", "", "council")) == "Meets every Tuesday"
    assert chosen(None) == chosen("") == ""


def test_the_sql_cuts_content_tags_and_key_in_that_order() -> None:
    # Given an FTS5 table shaped as the index's (key, content, tags)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(key, content, tags)")
    db.execute("INSERT INTO fts VALUES ('works_council', 'Meets every Tuesday', 'works')")
    # When a match reads its snippets
    (found,) = db.execute(f"SELECT {snippets_sql('fts')} FROM fts WHERE fts MATCH 'works'").fetchone()  # noqa: S608
    # Then they are the content's (no hit), the tags' and the key's, and the tags' is chosen
    assert found.split(COLUMN_BREAK) == ["Meets every Tuesday", hit("works"), f"{hit('works')}_council"]
    assert chosen(found) == hit("works")
