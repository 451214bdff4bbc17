"""A memory's days (time words, `doc_dates`) go into its generation in one statement, not one a day:
each SQLite statement lets go of the GIL and waits to get it back, which a busy process (the local
runner under load) makes the indexer's slowest step."""

from __future__ import annotations

import sqlite3

import pytest
from synapse.index import schema
from synapse.index.documents import Change, Doc
from synapse.when.content import days_about

MIND = "m_days"
AT = "2026-12-07T01:00:00Z"
CONTENT = "The roof needs another pass before Friday; remind me about it when we talk next week."


def indexed(db: sqlite3.Connection) -> tuple[list[tuple[str, int]], list[str]]:
    """Index one memory; its doc_dates rows, and the statements that wrote them."""
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    doc = Doc("mem_1", MIND, "note", "roof", CONTENT, (), "normal", AT, None, 1, created_at=AT)
    schema.apply_change(db, Change.upsert(doc))
    db.set_trace_callback(None)
    rows = db.execute("SELECT day, due FROM doc_dates ORDER BY day").fetchall()
    return rows, [s for s in statements if "INTO doc_dates" in s]


@pytest.fixture(name="db")
def db_fixture() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    schema.create_schema(db, MIND)
    return db


def test_a_memorys_days_are_inserted_in_one_statement(db: sqlite3.Connection) -> None:
    # Given a memory whose content names a dozen days
    expected = sorted((day.day, int(day.due)) for day in days_about(CONTENT, AT, None))
    assert len(expected) > 10
    # When it is indexed
    rows, inserts = indexed(db)
    # Then every day is there, written by one statement
    assert rows == expected
    assert len(inserts) == 1


def test_many_days_are_inserted_a_bounded_number_at_a_time(
    db: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given statements of at most 5 days
    monkeypatch.setattr(schema, "DAYS_PER_INSERT", 5)
    expected = sorted((day.day, int(day.due)) for day in days_about(CONTENT, AT, None))
    # When a memory of a dozen days is indexed
    rows, inserts = indexed(db)
    # Then every day is there, in as many statements as it takes
    assert rows == expected
    assert len(inserts) == -(-len(expected) // 5)
