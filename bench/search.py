"""Search benchmark, one run: `python bench/search.py [--memories 100000] [--sizes 1000,10000,100000]`.

(a) Index build rate: synthetic memories as stream records (Lambda's shape), through the indexer's
    own path (`StreamBatch.stage` → version-gated apply), published as one generation.
(b) Query latency, best of 3 per query: a fixed set of 200 queries through the search module
    (parse, sanitise, current generation lookup, ranked + filtered + snippet query with exact
    tie-breaking, snippet mapping; DynamoDB hydration left out, it is a network call) beside the
    same compiled FTS5 expressions as the idiomatic raw FTS5 SQL on the same file.
(c) Time to publish a new generation after a batch of 100 changes, for minds of each size.

Everything runs on a temp folder on local disk; on EFS the copy in (c) costs more (see the README).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]

from synapse.search.documents import Change, Doc  # noqa: E402
from synapse.search.filters import SearchFilters  # noqa: E402
from synapse.search.generations import current_generation  # noqa: E402
from synapse.search.query import parse_query  # noqa: E402
from synapse.search.ranking import index_hits  # noqa: E402
from synapse.search.readers import open_generation, reader  # noqa: E402
from synapse.search.schema import BM25_WEIGHTS  # noqa: E402
from synapse.search.stream import StreamBatch  # noqa: E402
from synapse.storage import tables  # noqa: E402

from tests.support.indexing import apply_batch  # noqa: E402

SEED = 20261130
REPEATS = 3
TAGS = [f"tag{i}" for i in range(60)]
PRIORITIES = ["low", "normal", "normal", "normal", "high", "critical"]
CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
ACCENTED = ["schäfer", "café", "müller", "façade", "ёлка", "ελληνικά", "naïve", "señor", "crème", "zürich"]


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size)}
    return sorted(words) + ACCENTED


def zipf_words(rng: random.Random, words: list[str], count: int) -> list[str]:
    # Rank-frequency ~ 1/rank: a few very common words, a long tail of rare ones.
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return rng.choices(words, weights=weights, k=count)


def memory_item(
    mind_id: str, i: int, rng: random.Random, words: list[str], version: int = 1
) -> dict[str, Any]:
    content = " ".join(zipf_words(rng, words, rng.randint(12, 60)))
    key_words = zipf_words(rng, words[:2000], 2)
    day = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"
    stamp = f"{day}T{i % 24:02d}:{i % 60:02d}:{(i // 60) % 60:02d}.{i % 1000:03d}Z"
    category = CATEGORIES[i % len(CATEGORIES)]
    key = f"{key_words[0]}_{key_words[1]}_{i}"
    return {
        "pk": mind_id,
        "sk": tables.memory_sk(category, key),
        "id": f"mem_bench{i:017d}",
        "mind_id": mind_id,
        "category": category,
        "key": key,
        "content": content,
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
        "priority": rng.choice(PRIORITIES),
        "source": "user",
        "verified": True,
        "confidence": 1.0,
        "created_at": stamp,
        "updated_at": stamp,
        "version": version,
    }


def record(item: dict[str, Any], n: int, name: str = "INSERT") -> dict[str, Any]:
    keys = {"pk": item["pk"], "sk": item["sk"]}
    return {
        "eventID": f"{n:032x}",
        "eventName": name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "Keys": tables.dump(keys),
            "NewImage": tables.dump(item),
            "SequenceNumber": str(10**20 + n),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def build(base: Path, mind_id: str, count: int, rng: random.Random, words: list[str]) -> tuple[float, int]:
    """Returns (seconds, file bytes): every memory through the indexer's record path, one generation."""
    records = [record(memory_item(mind_id, i, rng, words), i) for i in range(count)]
    started = time.perf_counter()
    batch = StreamBatch(base)
    try:
        for one in records:
            batch.stage(one)
        published = batch.publish()
    finally:
        batch.close()
    elapsed = time.perf_counter() - started
    path = published[mind_id]
    assert path is not None
    return elapsed, path.stat().st_size


def publish_after_100(base: Path, mind_id: str, size: int, rng: random.Random, words: list[str]) -> float:
    """Median seconds of five runs: copy the current generation, apply 100 changes, publish."""
    timings = []
    for run in range(5):
        changes = []
        for j in range(100):
            i = rng.randrange(size) if j % 2 else size + run * 100 + j  # half updates, half new
            item = memory_item(mind_id, i, rng, words, version=run + 2)
            changes.append(Change.upsert(Doc.from_item(item)))
        started = time.perf_counter()
        apply_batch(mind_id, changes, base)
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def fixed_queries(rng: random.Random, words: list[str]) -> list[tuple[str, SearchFilters]]:
    common, rare = words[:200], words[200:6000]
    none = SearchFilters(include_expired=True)
    shapes = [
        lambda: (rng.choice(common), none),
        lambda: (rng.choice(rare), none),
        lambda: (f"{rng.choice(common)} {rng.choice(rare)}", none),
        lambda: (f'"{rng.choice(common)} {rng.choice(common)}"', none),
        lambda: (rng.choice(rare)[:3] + "*", none),
        lambda: (f"{rng.choice(rare)} OR {rng.choice(rare)}", none),
        lambda: (f"{rng.choice(common)} NOT {rng.choice(common)}", none),
        lambda: (f"({rng.choice(rare)} OR {rng.choice(rare)}) {rng.choice(common)}", none),
        lambda: (rng.choice(common), SearchFilters(tag=rng.choice(TAGS), include_expired=True)),
        lambda: (rng.choice(ACCENTED).replace("ä", "a").replace("é", "e"), none),
    ]
    return [shapes[i % len(shapes)]() for i in range(200)]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def query_latency(base: Path, mind_id: str, queries: list[tuple[str, SearchFilters]]) -> dict[str, float]:
    now = "2026-11-30T00:00:00.000Z"
    generation = current_generation(base / mind_id)
    assert generation is not None
    raw_db = open_generation(generation)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    # The idiomatic FTS5 query: FTS5 ranks and sorts itself; snippets only for the 20 rows returned.
    raw_sql = (
        "SELECT rowid, -rank, snippet(fts, -1, '**', '**', '…', 16) FROM fts"
        " WHERE fts MATCH ? AND rank MATCH 'bm25({weights})'{tag} ORDER BY rank LIMIT 20"
    )
    tagged = " AND EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = fts.rowid)"

    def raw_query(text: str, filters: SearchFilters) -> None:
        if filters.tag is None:
            raw_db.execute(raw_sql.format(weights=weights, tag=""), (compiled[text],)).fetchall()
        else:
            raw_db.execute(
                raw_sql.format(weights=weights, tag=tagged), (compiled[text], filters.tag)
            ).fetchall()

    compiled = {text: parse_query(text).match for text, _ in queries}

    def through_module(text: str, filters: SearchFilters) -> int:
        db = reader(mind_id, base)
        assert db is not None
        hits, _ = index_hits(db, parse_query(text), filters, 20, 0, now)
        return len(hits)

    module_ms, raw_ms, hits = [], [], 0
    for text, filters in queries:  # warm both paths (page cache, statement cache)
        through_module(text, filters)
        raw_query(text, filters)
    # Each query's time is the best of REPEATS runs, the two paths interleaved: on a shared machine
    # this drops scheduler noise from both sides alike.
    for text, filters in queries:
        best_module = best_raw = float("inf")
        for _ in range(REPEATS):
            started = time.perf_counter()
            found = through_module(text, filters)
            best_module = min(best_module, time.perf_counter() - started)
            started = time.perf_counter()
            raw_query(text, filters)
            best_raw = min(best_raw, time.perf_counter() - started)
        hits += found
        module_ms.append(best_module * 1000)
        raw_ms.append(best_raw * 1000)
    return {
        "module_p50": percentile(module_ms, 50),
        "module_p95": percentile(module_ms, 95),
        "raw_p50": percentile(raw_ms, 50),
        "raw_p95": percentile(raw_ms, 95),
        "mean_hits": hits / len(queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000, help="size of the mind for (a) and (b)")
    parser.add_argument("--sizes", default="1000,10000,100000", help="mind sizes for (c)")
    args = parser.parse_args()
    rng = random.Random(SEED)
    words = vocabulary(rng)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="synapse-bench-") as folder:
        base = Path(folder)
        main_mind = f"m_bench{args.memories}"
        seconds, size = build(base, main_mind, args.memories, rng, words)
        print(
            f"(a) build: {args.memories} memories in {seconds:.2f} s"
            f" = {args.memories / seconds:,.0f} memories/s"
            f" through StreamBatch.stage; generation file {size / 1e6:.1f} MB"
        )

        stats = query_latency(base, main_mind, fixed_queries(random.Random(SEED + 1), words))
        print(f"(b) 200 queries on {args.memories} memories (mean {stats['mean_hits']:.1f} hits of ≤20):")
        print(f"    search module  p50 {stats['module_p50']:.2f} ms  p95 {stats['module_p95']:.2f} ms")
        print(f"    raw FTS5 SQL   p50 {stats['raw_p50']:.2f} ms  p95 {stats['raw_p95']:.2f} ms")
        print(
            f"    ratio          p50 {stats['module_p50'] / stats['raw_p50']:.2f}  "
            f"p95 {stats['module_p95'] / stats['raw_p95']:.2f}  (target ≤ 1.5)"
        )

        print("(c) publish a new generation after a batch of 100 changes (median of 5):")
        for mind_size in sizes:
            mind_id = f"m_bench{mind_size}"
            if mind_size != args.memories:
                build(base, mind_id, mind_size, rng, words)
            seconds = publish_after_100(base, mind_id, mind_size, rng, words)
            current = current_generation(base / mind_id)
            assert current is not None
            print(
                f"    {mind_size:>7} memories: {seconds * 1000:8.1f} ms"
                f"  (file {current.stat().st_size / 1e6:.1f} MB)"
            )


if __name__ == "__main__":
    main()
