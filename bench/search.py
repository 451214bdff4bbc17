"""Search benchmark: `python bench/search.py [--sizes 1000,10000,100000] [--repeats 5] [--rebuild]`.

For each mind size N, a synthetic mind (Zipf-distributed words, some accented; 10 % of memories
expired, 10 % expiring later) is indexed through the indexer's own path (`StreamBatch.stage`), once:
the built index is cached under .cache/search-bench/ (`--rebuild` builds it again) and copied to a
temp folder for the run. Then:

(b) Query latency, 200 queries with the default filters (expired memories left out; every tenth with a
    tag filter too), two paths interleaved in rotating order, each query's time the median of
    `--repeats` runs, then p50 and p95 over the 200 queries:
    - search module: current generation lookup (CURRENT read), parse and compile the query, the ranked
      + filtered + snippet statement with exact tie-breaking, snippet mapping (no DynamoDB);
    - raw FTS5 SQL: the honest equivalent on its own connection to the same generation: the same
      compiled MATCH, the same bm25 weights and ORDER BY rank, the same expiry and tag filters (same
      join), the same snippet() call, LIMIT 21: the page and the one row that says whether a next page
      exists, which the module reads too.
    Times are the thread's CPU time (immune to preemption on a shared machine: the ratio target);
    wall-clock figures are printed beside them.
(c) The end-to-end handler (functions/search/app.py): an API Gateway v2 event with the authorizer's
    context, request parsing, the query, hydration of the hits from DynamoDB (in-process moto, holding
    every memory the queries return), JSON rendering. Wall clock, median of `--repeats` per query.
(d) Publishing a batch of 100 changes (half updates, half new memories): median of 5 batches, the bytes
    written per batch (the log's growth; the base is not rewritten) and the base's size; then one
    compaction of the log into a new base, timed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from infra import motofix, template  # noqa: E402
from infra.gateway import LambdaContext  # noqa: E402

SEED = 20261130
CACHE = ROOT / ".cache" / "search-bench"
CORPUS_VERSION = "2"  # bump when the corpus or the index layout changes
QUERY_NOW = "2026-11-30T00:00:00.000Z"
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
    return rng.choices(words, cum_weights=_cumulative(len(words)), k=count)


_CUMULATIVE: dict[int, list[float]] = {}


def _cumulative(size: int) -> list[float]:
    if size not in _CUMULATIVE:
        total, sums = 0.0, []
        for rank in range(size):
            total += 1.0 / (rank + 1)
            sums.append(total)
        _CUMULATIVE[size] = sums
    return _CUMULATIVE[size]


def memory_item(
    mind_id: str, i: int, rng: random.Random, words: list[str], version: int = 1
) -> dict[str, Any]:
    from synapse.storage import tables

    content = " ".join(zipf_words(rng, words, rng.randint(12, 60)))
    key_words = zipf_words(rng, words[:2000], 2)
    day = f"2026-{1 + i % 11:02d}-{1 + i % 28:02d}"
    stamp = f"{day}T{i % 24:02d}:{i % 60:02d}:{(i // 60) % 60:02d}.{i % 1000:03d}Z"
    category = CATEGORIES[i % len(CATEGORIES)]
    key = f"{key_words[0]}_{key_words[1]}_{i}"
    item: dict[str, Any] = {
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
    if i % 10 == 3:
        item["expires_at"] = f"2026-0{1 + i % 9}-15T00:00:00.000Z"  # expired at QUERY_NOW and now
    elif i % 10 == 7:
        item["expires_at"] = "2099-01-01T00:00:00.000Z"
    return item


def corpus(mind_id: str, count: int) -> list[dict[str, Any]]:
    rng = random.Random(SEED + count)
    words = vocabulary(random.Random(SEED))
    return [memory_item(mind_id, i, rng, words) for i in range(count)]


def record(item: dict[str, Any], n: int) -> dict[str, Any]:
    from synapse.storage import tables

    return {
        "eventID": f"{n:032x}",
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "Keys": tables.dump({"pk": item["pk"], "sk": item["sk"]}),
            "NewImage": tables.dump(item),
            "SequenceNumber": str(10**20 + n),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def build(base: Path, mind_id: str, items: list[dict[str, Any]]) -> float:
    """Seconds to index every memory through the indexer's record path into one generation."""
    from synapse.search.stream import StreamBatch

    records = [record(item, n) for n, item in enumerate(items)]
    started = time.perf_counter()
    batch = StreamBatch(base)
    try:
        for one in records:
            batch.stage(one)
        batch.publish()
    finally:
        batch.close()
    return time.perf_counter() - started


def prepared_index(mind_id: str, items: list[dict[str, Any]], rebuild: bool, into: Path) -> str:
    """Copy the cached index of this corpus into `into` (building it first if needed)."""
    cached = CACHE / f"v{CORPUS_VERSION}-{len(items)}"
    note = "from the cache"
    if rebuild or not (cached / mind_id / "CURRENT").is_file():
        shutil.rmtree(cached, ignore_errors=True)
        cached.mkdir(parents=True)
        seconds = build(cached, mind_id, items)
        note = f"built in {seconds:.1f} s = {len(items) / seconds:,.0f} memories/s through StreamBatch.stage"
    shutil.copytree(cached / mind_id, into / mind_id, ignore=shutil.ignore_patterns(".writer.lock"))
    return note


def fixed_queries(rng: random.Random, words: list[str]) -> list[tuple[str, str | None]]:
    """200 (query, tag filter) pairs of ten shapes; the default filters otherwise."""
    common, rare = words[:200], words[200:6000]
    shapes: list[Callable[[], tuple[str, str | None]]] = [
        lambda: (rng.choice(common), None),
        lambda: (rng.choice(rare), None),
        lambda: (f"{rng.choice(common)} {rng.choice(rare)}", None),
        lambda: (f'"{rng.choice(common)} {rng.choice(common)}"', None),
        lambda: (rng.choice(rare)[:3] + "*", None),
        lambda: (f"{rng.choice(rare)} OR {rng.choice(rare)}", None),
        lambda: (f"{rng.choice(common)} NOT {rng.choice(common)}", None),
        lambda: (f"({rng.choice(rare)} OR {rng.choice(rare)}) {rng.choice(common)}", None),
        lambda: (rng.choice(common), rng.choice(TAGS)),
        lambda: (rng.choice(ACCENTED).replace("ä", "a").replace("é", "e"), None),
    ]
    return [shapes[i % len(shapes)]() for i in range(200)]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


RAW_SQL = (
    "SELECT d.id, -fts.rank, snippet(fts, -1, '**', '**', '…', 16)"
    " FROM fts JOIN docs d ON d.rowid = fts.rowid"
    " WHERE fts MATCH ? AND fts.rank MATCH 'bm25({weights})'{tag}"
    " AND (d.expires_at IS NULL OR d.expires_at > ?)"
    " ORDER BY fts.rank LIMIT {limit}"
)
RAW_TAG = " AND EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid)"


def query_paths(base: Path, mind_id: str) -> dict[str, Callable[[str, str | None], int]]:
    """The module, and raw SQL with LIMIT 21 (the page and the row saying a next page exists, as the
    module reads) on its own connection to the same generation. Only these two are interleaved: a
    third path running the same SQL would warm the caches for its twin and bias the ratio."""
    from synapse.search.filters import SearchFilters
    from synapse.search.generations import current_generation
    from synapse.search.query import parse_query
    from synapse.search.ranking import index_hits
    from synapse.search.readers import open_generation, reader
    from synapse.search.schema import BM25_WEIGHTS

    generation = current_generation(base / mind_id)
    assert generation is not None
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    compiled: dict[str, str] = {}

    def raw_path(limit: int) -> Callable[[str, str | None], int]:
        raw_db = open_generation(generation)
        plain = RAW_SQL.format(weights=weights, tag="", limit=limit)
        tagged = RAW_SQL.format(weights=weights, tag=RAW_TAG, limit=limit)

        def raw(text: str, tag: str | None) -> int:
            match = compiled.get(text) or compiled.setdefault(text, parse_query(text).match)
            if tag is None:
                return len(raw_db.execute(plain, (match, QUERY_NOW)).fetchall())
            return len(raw_db.execute(tagged, (match, tag, QUERY_NOW)).fetchall())

        return raw

    def module(text: str, tag: str | None) -> int:
        db = reader(mind_id, base)
        assert db is not None
        return len(index_hits(db, parse_query(text), SearchFilters(tag=tag), 20, 0, QUERY_NOW)[0])

    return {"module": module, "raw": raw_path(21)}


def timed(paths: dict[str, Callable[..., Any]], args: list[tuple[Any, ...]], repeats: int) -> dict[str, Any]:
    """Per path: each call's median CPU and wall time over `repeats`, paths interleaved in rotation."""
    names = list(paths)
    cpu: dict[str, list[list[float]]] = {n: [[] for _ in args] for n in names}
    wall: dict[str, list[list[float]]] = {n: [[] for _ in args] for n in names}
    for one in args:  # warm both paths (page cache, statement cache)
        for name in names:
            paths[name](*one)
    for run in range(repeats):
        for at, one in enumerate(args):
            turn = (run + at) % len(names)
            for name in names[turn:] + names[:turn]:
                started_cpu, started = time.thread_time(), time.perf_counter()
                paths[name](*one)
                wall[name][at].append(time.perf_counter() - started)
                cpu[name][at].append(time.thread_time() - started_cpu)
    out: dict[str, Any] = {}
    for name in names:
        for kind, data in (("cpu", cpu), ("wall", wall)):
            medians = [statistics.median(times) * 1000 for times in data[name]]
            out[f"{name}_{kind}"] = (percentile(medians, 50), percentile(medians, 95))
    return out


def end_to_end(
    mind_id: str, items: list[dict[str, Any]], queries: list[tuple[str, str | None]], repeats: int
) -> dict[str, Any]:
    """The search handler over moto: (p50, p95) ms wall, and the mean results per page."""
    from urllib.parse import quote

    from synapse.storage import tables

    from tests.support.events import Sample, handler_event

    sys.path.insert(0, str(ROOT / "functions" / "search"))
    import app  # type: ignore[import-not-found]

    sys.path.pop(0)
    client = boto3.client("dynamodb", region_name="us-east-1")
    context = LambdaContext("SearchFunction")
    events = []
    for text, tag in queries:
        query = f"q={quote(text)}" + (f"&tag={tag}" if tag else "")
        events.append(handler_event(Sample("GET", "/memory/search", as_agent=True, query=query)))
    # Moto holds the memories the queries return (hydration reads them by key; others cost nothing).
    hits = _hit_ids(mind_id, queries)
    by_id = {item["id"]: item for item in items}
    for memory_id in hits:
        client.put_item(TableName=tables.memories_table(), Item=tables.dump(by_id[memory_id]))
    results = 0

    def handle(event: dict[str, Any]) -> None:
        nonlocal results
        with contextlib.redirect_stdout(io.StringIO()):  # the metrics line Lambda would log
            response = app.handler(event, context)
        assert response["statusCode"] == 200, response
        results += len(json.loads(response["body"])["results"])

    stats = timed({"handler": handle}, [(e,) for e in events], repeats)
    return {**stats, "mean_results": results / (len(events) * (repeats + 1)), "stored": len(hits)}


def _hit_ids(mind_id: str, queries: list[tuple[str, str | None]]) -> set[str]:
    """Every memory id the queries' first pages (and the few rounds after skipped hits) can return."""
    from synapse.search.filters import SearchFilters
    from synapse.search.query import parse_query
    from synapse.search.ranking import index_hits
    from synapse.search.readers import reader

    db = reader(mind_id)
    assert db is not None
    found: set[str] = set()
    for text, tag in queries:
        hits, _ = index_hits(db, parse_query(text), SearchFilters(tag=tag), 100, 0, QUERY_NOW)
        found.update(hit.id for hit in hits)
    return found


def publishing(base: Path, mind_id: str, size: int) -> dict[str, float]:
    """Batches of 100 changes on the mind (compaction held off): median ms and bytes written per batch;
    then one compaction of their log into a new base, timed."""
    from synapse.search import generations
    from synapse.search.documents import Change, Doc
    from synapse.search.writer import compact

    from tests.support.indexing import apply_batch

    rng = random.Random(SEED + 7)
    words = vocabulary(random.Random(SEED))
    folder = base / mind_id
    generation = generations.current_generation(folder)
    assert generation is not None
    bound = max(generations.COMPACT_MIN_BYTES, generations.COMPACT_RATIO * generation.stat().st_size)
    timings, written = [], []
    held, generations.COMPACT_MIN_BYTES = generations.COMPACT_MIN_BYTES, 1 << 62
    try:
        for run in range(5):
            changes = []
            for j in range(100):
                i = rng.randrange(size) if j % 2 else size + run * 100 + j  # half updates, half new
                item = memory_item(mind_id, i, rng, words, version=run + 2)
                changes.append(Change.upsert(Doc.from_item(item)))
            before = generations.log_bytes(generation)
            started = time.perf_counter()
            published = apply_batch(mind_id, changes, base)
            timings.append(time.perf_counter() - started)
            assert published == generation, "the batch went to the current base's log"
            written.append(generations.log_bytes(generation) - before)
    finally:
        generations.COMPACT_MIN_BYTES = held
    started = time.perf_counter()
    compacted = compact(mind_id, base)
    compaction = time.perf_counter() - started
    assert compacted is not None
    per_batch = statistics.median(written)
    every = max(1, int(bound // per_batch))
    return {
        "ms": statistics.median(timings) * 1000,
        "bytes": per_batch,
        "max_bytes": max(written),
        "base": generation.stat().st_size,
        "bound": bound,
        "every": every,
        "amortized": per_batch + compacted.stat().st_size / every,
        "compaction_ms": compaction * 1000,
    }


def run_size(size: int, repeats: int, rebuild: bool) -> None:
    from synapse.core.settings import get_settings

    from tests.support.events import EXAMPLE_MIND_ID

    mind_id = EXAMPLE_MIND_ID
    items = corpus(mind_id, size)
    with tempfile.TemporaryDirectory(prefix="synapse-bench-") as folder:
        base = Path(folder)
        note = prepared_index(mind_id, items, rebuild, base)
        os.environ["SYNAPSE_INDEX_DIR"] = str(base)
        get_settings.cache_clear()
        print(f"\n{size:,} memories ({note})")
        queries = fixed_queries(random.Random(SEED + 1), vocabulary(random.Random(SEED)))
        stats = timed(query_paths(base, mind_id), list(queries), repeats)
        for kind, label in (("cpu", "CPU time"), ("wall", "wall clock")):
            module, raw = stats[f"module_{kind}"], stats[f"raw_{kind}"]
            print(
                f"  (b) {label:10}  module p50 {module[0]:.3f} ms p95 {module[1]:.3f} ms"
                f" | raw FTS5 p50 {raw[0]:.3f} ms p95 {raw[1]:.3f} ms"
                f" | ratio p50 {module[0] / raw[0]:.2f} p95 {module[1] / raw[1]:.2f}"
                + ("  (target ≤ 1.5)" if kind == "cpu" else "")
            )
        e2e = end_to_end(mind_id, items, queries, repeats)
        p50, p95 = e2e["handler_wall"]
        print(
            f"  (c) handler end to end (event → JSON, hydrated from moto): p50 {p50:.2f} ms p95 {p95:.2f} ms"
            f"  ({e2e['mean_results']:.1f} results per page; CPU p50 {e2e['handler_cpu'][0]:.2f} ms)"
        )
        published = publishing(base, mind_id, size)
        print(
            f"  (d) publish a batch of 100 changes: {published['ms']:.1f} ms (median of 5),"
            f" {published['bytes'] / 1e3:,.0f} kB written per batch"
            f" (max {published['max_bytes'] / 1e3:,.0f} kB)"
            f" to the log; the base ({published['base'] / 1e6:.1f} MB) is not rewritten"
        )
        print(
            f"      compaction (log past {published['bound'] / 1e6:.1f} MB: every ~{published['every']:.0f}"
            f" batches at this size) {published['compaction_ms']:.0f} ms;"
            f" amortized {published['amortized'] / 1e3:,.0f} kB written per batch"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="mind sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="runs per query; its median counts")
    parser.add_argument("--rebuild", action="store_true", help="build the indexes again, not from the cache")
    args = parser.parse_args()
    motofix.apply()
    with mock_aws():
        template.create_tables(
            boto3.client("dynamodb", region_name="us-east-1"),
            {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"},
        )
        for size in [int(s) for s in args.sizes.split(",") if s]:
            run_size(size, args.repeats, args.rebuild)


if __name__ == "__main__":
    main()
