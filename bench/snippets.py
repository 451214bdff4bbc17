"""What cutting the snippet from the content costs: `python bench/snippets.py [--size 10000] [--repeats 5]`.

A snippet used to be FTS5's `snippet(fts, -1, …)` (the column with most hits, the key on a tie); it is
now the content's, tags' and key's cut apart and the first with a hit kept (`search/snippets.py`). On
one synthetic mind in the index's own `fts` table (notes whose keys are derived from their content,
as a content-only write stores them), 200 one-word queries each read a page of 21 rows with its
snippets, the two ways interleaved; each query's time is the median of `--repeats` runs of the
thread's CPU time. Printed: p50 and p95 per page both ways, their ratio, how many of the old
snippets were the key rather than the text, and how many of the new ones are the content's.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "synapse"))

from synapse.index.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN
from synapse.memory.keys import derived_key
from synapse.search.snippets import COLUMN_BREAK, snippets_sql

WORDS = [f"w{n}" for n in range(3000)]
OLD = f"snippet(fts, -1, char({ord(MARK_OPEN)}), char({ord(MARK_CLOSE)}), char({ord(ELLIPSIS)}), 16)"
PAGE = "SELECT {snippet} FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 21"


def mind(size: int, rng: random.Random) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(key, content, tags, tokenize = 'porter unicode61')")
    rows = []
    for _ in range(size):
        content = " ".join(rng.choices(WORDS[:600], k=rng.randint(6, 30)))  # Zipf-ish: a common core
        tags = " ".join(rng.sample(WORDS[:50], k=rng.randint(0, 2)))
        rows.append((derived_key("note", content).replace("_", " "), content, tags))
    db.executemany("INSERT INTO fts (key, content, tags) VALUES (?, ?, ?)", rows)
    return db


def page_time(db: sqlite3.Connection, sql: str, word: str, repeats: int) -> tuple[float, list[str]]:
    times, found = [], []
    for _ in range(repeats):
        start = time.thread_time()
        found = [row[0] for row in db.execute(sql, (word,))]
        times.append(time.thread_time() - start)
    return statistics.median(times), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(41)
    db = mind(args.size, rng)
    old_sql, new_sql = PAGE.format(snippet=OLD), PAGE.format(snippet=snippets_sql("fts"))
    old_times, new_times, on_key, shown, from_content = [], [], 0, 0, 0
    for n, word in enumerate(rng.choices(WORDS[:600], k=200)):
        ways = [(old_sql, old_times), (new_sql, new_times)]
        for sql, times in ways if n % 2 else ways[::-1]:
            spent, found = page_time(db, sql, word, args.repeats)
            times.append(spent)
            if sql is new_sql:
                shown += len(found)
                from_content += sum(1 for s in found if MARK_OPEN in s.split(COLUMN_BREAK)[0])
        cut = db.execute(PAGE.format(snippet=f"{OLD}, key"), (word,)).fetchall()  # untimed: which column
        on_key += sum(1 for s, key in cut if s.replace(MARK_OPEN, "").replace(MARK_CLOSE, "") == key)

    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, round(q * (len(values) - 1)))] * 1000

    print(f"mind of {args.size} notes, 200 one-word queries, a page of 21 rows, median of {args.repeats}")
    print(f"snippet(fts, -1)      p50 {p(old_times, 0.5):.3f} ms  p95 {p(old_times, 0.95):.3f} ms")
    print(f"content, tags, key    p50 {p(new_times, 0.5):.3f} ms  p95 {p(new_times, 0.95):.3f} ms")
    print(f"ratio new/old         p50 {p(new_times, 0.5) / p(old_times, 0.5):.2f}")
    print(f"old snippets that were the key: {on_key} of {shown}; new ones from the content: {from_content}")


if __name__ == "__main__":
    main()
