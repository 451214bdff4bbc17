"""Time in questions: `python bench/time.py [--k 3]`.

bench/data/time.json holds one person's mind on a fixed now (Thursday 2026-12-03 10:00 UTC): dated
memories (a date written in the content, read relative to when each was stored, or an
`occurred_at`), distractors that share the question's time words ("Kitchen renovation planned for
next summer", "Last week of every month: send the invoice", the song "Yesterday") and undated
everyday facts; and dated questions ("What is coming up next week?", "What did I do last
weekend?"), each with the keys that answer it. Every sentence is this bench's own.

The memories are indexed through the indexer's own writer (`index.writer.Writer`, with the
vectors of the model that ships), and each question is ranked by hybrid search's own ranking
(`search.fusion.hybrid_hits`, the part of `service.search` before hydrating from the table):

- BEFORE: the question as words (`parse_query(q)`: "next" and "week" are words), no window;
- AFTER: the question read for time (`search.in_time.read`): its time expressions become a window
  of days the memories dated in it rank up in, the rest is searched as words.

Prints r@1 and r@3 (an answering key among the first n) side by side, then the questions AFTER
misses at 3. Target: AFTER r@3 >= 0.9. `--data bench/data/time_holdout.json` runs the set written
blind to the grammar (another person, another now).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})

from synapse.index import vectors  # noqa: E402
from synapse.index.documents import Change, Doc  # noqa: E402
from synapse.index.readers import open_generation  # noqa: E402
from synapse.index.writer import Writer  # noqa: E402
from synapse.search import fusion, in_time  # noqa: E402
from synapse.search.filters import Mode, SearchFilters  # noqa: E402
from synapse.search.query import parse_query  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "time.json"
MIND = "m_timebench"
TARGET_R3 = 0.9


def build(base: Path, memories: list[dict[str, str]]) -> Path:
    with Writer(MIND, base) as writer:
        for n, memory in enumerate(memories):
            doc = Doc(
                id=f"mem_{n:03d}",
                mind_id=MIND,
                category="note",
                key=memory["key"],
                content=memory["content"],
                tags=(),
                priority="normal",
                updated_at=memory["created_at"],
                expires_at=None,
                version=1,
                created_at=memory["created_at"],
                occurred_at=memory.get("occurred_at"),
            )
            writer.apply(Change.upsert(doc))
        published = writer.publish()
    assert published is not None
    return published


def ranked_keys(db: object, q: str, now: datetime, timed: bool, k: int) -> list[str]:
    query = parse_query(q)
    window = None
    mode = Mode.HYBRID
    if timed:
        reading = in_time.read(q, query, now, UTC)
        query, window = reading.query, reading.window
        if not query.clauses:
            mode = Mode.SEMANTIC
    question = vectors.question_vector(q)
    scored, _ = fusion.hybrid_hits(db, query, question, SearchFilters(), k, 0, now.isoformat(), mode, window)  # type: ignore[arg-type]
    return [s.hit.key for s in scored]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA, help="a set of the same shape (a held-out one)")
    args = parser.parse_args()
    data = json.loads(args.data.read_text())
    now = datetime.fromisoformat(data["now"].replace("Z", "+00:00"))
    with tempfile.TemporaryDirectory() as folder:
        db = open_generation(build(Path(folder), data["memories"]))
        rows = []
        for item in data["questions"]:
            answers = set(item["answers"])
            before = ranked_keys(db, item["q"], now, False, args.k)
            after = ranked_keys(db, item["q"], now, True, args.k)
            rows.append((item["q"], answers, before, after))
    total = len(rows)

    def rate(side: int, n: int) -> float:
        return sum(bool(set(r[side][:n]) & r[1]) for r in rows) / total

    print(f"{len(data['memories'])} memories, {total} dated questions, now = {data['now']}")
    print(f"{'':8} {'r@1':>6} {'r@3':>6}")
    print(f"{'before':8} {rate(2, 1):6.3f} {rate(2, 3):6.3f}   (time words as plain words, no window)")
    print(f"{'after':8} {rate(3, 1):6.3f} {rate(3, 3):6.3f}   (time words read as a soft window)")
    missed = [r for r in rows if not set(r[3][:3]) & r[1]]
    print(f"after r@3 target >= {TARGET_R3}: {'met' if rate(3, 3) >= TARGET_R3 else 'NOT met'}")
    for q, answers, before, after in missed:
        print(f"  missed: {q!r} wants {sorted(answers)}; after {after[:3]}, before {before[:3]}")


if __name__ == "__main__":
    main()
