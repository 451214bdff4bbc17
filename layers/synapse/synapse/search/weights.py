"""How much each clause of a best-match query counts in a hit's coverage: an ordinary word 1, a word
in a large share of the mind's memories (a speaker's name in a conversation log) less."""

from __future__ import annotations

import math
import sqlite3

# A clause's weight in coverage: 1 while it matches at most COMMON_SHARE of the mind's memories (and
# at least COMMON_FLOOR of them), then less and less as it gets commoner, by its inverse document
# frequency idf(n) = ln(1 + (N - n + 0.5) / (n + 0.5)) (N rows, n matching: BM25's IDF kept
# positive) over idf at that share. A speaker's name in half of a conversation log weighs 0.3, a
# word in 90 % of the memories 0.05. Ordinary words keep counting 1 each, so BM25 (tf, key and tag
# weights) still orders the memories that cover as much: weighing every clause by its IDF instead
# lost 0.017 of r@3 on the stem-sharing questions (bench/questions.py; docs/search.md). Weights are
# integer thousandths so equal sets of clauses sum to exactly equal weights in SQL's ORDER BY.
IDF_SCALE = 1000
COMMON_SHARE = 0.1
COMMON_FLOOR = 2
# FTS5's "averages" record (`<table>_data` id 1): the row count, then each column's token count.
_ROWS_SQL = "SELECT block FROM fts_data WHERE id = 1"


def _varint(block: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at `at`: its value and where the next one starts."""
    value = 0
    for n in range(9):
        byte = block[at + n]
        if n == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + n + 1
    raise AssertionError("unreachable")


def _row_count(db: sqlite3.Connection) -> int:
    """How many memories the generation indexes: the first varint of FTS5's averages record (one
    small read), else counted."""
    found = db.execute(_ROWS_SQL).fetchone()
    if found is not None and found[0]:
        with_rows: int = _varint(found[0], 0)[0]
        return with_rows
    (counted,) = db.execute("SELECT count(*) FROM docs WHERE deleted = 0").fetchone()
    return int(counted)


def _idf(rows: int, matching: float) -> float:
    return math.log1p((rows - matching + 0.5) / (matching + 0.5))


class Weights(list[int]):
    """Each clause's weight in coverage (`clause_weight`), and its full IDF (`idfs`): what the fusion
    of words and meaning counts besides, so that a shared rare word ("physiotherapist", in one turn
    of a log) counts more than a shared ordinary one ("knee", in six)."""

    idfs: tuple[float, ...] = ()


def clause_weight(rows: int, matching: int) -> int:
    """A clause's weight in coverage, in IDF_SCALE units: IDF_SCALE for an ordinary word, less for
    one in more than COMMON_SHARE of the memories (never 0)."""
    common = max(COMMON_SHARE * rows, COMMON_FLOOR)
    if matching <= common:
        return IDF_SCALE
    return max(1, round(IDF_SCALE * _idf(rows, matching) / _idf(rows, common)))


def idf_weights(db: sqlite3.Connection, counts_sql: str, params: list[str]) -> Weights:
    """Each clause's weight in coverage (`clause_weight`): a word in nearly every memory (a speaker's
    name in a conversation log) weighs little; and its full IDF (`Weights.idfs`). `counts_sql`
    selects one column per clause: how many rows match it."""
    rows = _row_count(db)
    counts = db.execute(counts_sql, params).fetchone()
    weights = Weights(clause_weight(rows, n) for n in counts)
    weights.idfs = tuple(_idf(rows, n) for n in counts)
    return weights
