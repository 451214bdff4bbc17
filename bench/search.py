"""Search benchmark: `python bench/search.py [--sizes 1000,10000,100000] [--repeats 5] [--rebuild]
[--upgrade-size 10000]`.

For each mind size N, a synthetic mind (Zipf-distributed words, some accented; 10 % of memories
expired, 10 % expiring later) is indexed through the indexer's own path (`StreamBatch.stage`), once:
the built index is cached under .cache/search-bench/ (`--rebuild` builds it again) and copied to a
temp folder for the run. Then:

(b) Query latency, two query sets of 200 queries each with the default filters (expired memories
    left out; every tenth with a tag filter too), two paths interleaved in rotating order, each
    query's time the median of `--repeats` runs, then p50 and p95 over the 200 queries:
    - the old set: ten shapes (one word, two words, a phrase, a prefix, OR, NOT, a group, a tag, an
      accent); its multi-word plain shapes are best match now;
    - the best-match set: 3-10 terms from the corpus's vocabulary, common and rare words mixed,
      natural questions among them ("what is the … ?", with function words and a question mark);
    and the two paths:
    - search module: current generation lookup (CURRENT read), parse and compile the query, the
      statement(s) `ranking.index_hits` runs, snippet mapping, the hits (no DynamoDB);
    - raw FTS5 SQL: the honest equivalent on its own connection to the same generation, with the
      query compiled once beforehand. A query whose clauses all must match (one clause, or all
      required): the same compiled MATCH, bm25 weights and ORDER BY rank, the same expiry and tag
      filters (same join), the same snippet() call, LIMIT 21 (the page and the one row that says
      whether a next page exists, which the module reads too). A best-match query (≥ 2 clauses, not
      all required): the module's two statements written by hand — the MATERIALIZED CTE of the
      candidates' MATCH with a bit per clause (`rowid IN (SELECT rowid FROM fts WHERE fts MATCH
      <clause>)`), joined to docs with the same filters, ORDER BY clauses matched DESC, rank,
      priority, recency, id, LIMIT 21; then snippet() for the page's rowids only. Before timing, the
      two paths' ids are checked to be the same, in the same order, for every query.
    For the best-match set, a reference pass interleaves that raw coverage SQL with a plain
    `ORDER BY rank LIMIT 21` over the same OR-expression (snippet inline): what best match would
    cost without the coverage ordering.
    Times are the thread's CPU time (immune to preemption on a shared machine: the ratio target);
    wall-clock figures are printed beside them.
(c) The end-to-end handler (functions/search/app.py): an API Gateway v2 event with the authorizer's
    context, request parsing, the query, hydration of the hits from DynamoDB (in-process moto, holding
    every memory the queries return), JSON rendering. Wall clock, median of `--repeats` per query.
(d) Publishing a batch of 100 changes (half updates, half new memories): median of 5 batches, the bytes
    written per batch (the log's growth; the base is not rewritten) and the base's size; then one
    compaction of the log into a new base, timed.
(e) Index size and indexing time, the previous format (schema "2": the stems alone, porter) against
    the current (schema "3": the stems and the words as written, `fts_exact`): the same corpus built through
    `StreamBatch.stage` both ways in this run (rounds alternate old/new; 3 rounds below 100k, 1 at
    100k, the median counts), bytes and ms per 1,000 memories, and the FTS5 index's own bytes
    (`fts_data`, from dbstat).
(f) The rebuild of the mind: `rebuild.rebuild(mind_id, items=<every memory>)` into the mind's folder
    (its current generation there, so the carry-over runs), timed whole and by part; the DynamoDB
    read it would do is not run: its size by DynamoDB's item-size rules and the 1 MB Query pages it
    takes are printed instead.
(h) `--hybrid N` (issue 33): search by words and meaning against lexical search, in one run. A mind of
    N memories of English words (`english_vocabulary`), indexed through `StreamBatch.stage` with the
    shipped model (the rate, memories/s with embedding, is printed), then the 200 best-match queries
    of (b) in those words, one thread, interleaved: lexical (`mode=lexical`: parse, `index_hits`)
    against hybrid (parse, the query's embedding with the model's cache cleared so every query is
    new, the fused ranking `fusion.hybrid_hits` over the generation's cached vector matrix, with
    relevance's dependence check, which re-embeds the question without each word for a hit found by
    meaning alone), the same hybrid without that check (the question's text not passed), and
    hybrid without pulling a first hit's newer value into the ranking (`search.newer`); then
    lexical and hybrid through the search handler end to end (hydrated from moto). And the query
    embedding alone.
(g) Once, after the sizes (`--upgrade-size`, default 10,000; 0 skips it): the in-place upgrade. A
    schema-"2" generation of that many memories, the same memories in the table (moto), one `Writer`
    batch of 100 changes: the writer upgrades the generation in place (`schema.IN_PLACE_UPGRADES`:
    the words as written indexed from the stems' table, no table read), then applies the batch.
    Timed whole and by part (the upgrade step, publish and compaction); a version without an
    in-place path is rebuilt from the table and timed by part (moto's Query pages, indexing,
    carry-over, publish; moto is not DynamoDB, so its read time says little about DynamoDB's).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from infra import motofix, template  # noqa: E402
from infra.gateway import LambdaContext  # noqa: E402
from tests.support.streams import stream_record  # noqa: E402

SEED = 20261130
CACHE = ROOT / ".cache" / "search-bench"
CORPUS_VERSION = "4"  # bump when the corpus or the index layout changes (4: schema 3, fts_exact)
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


def corpus(mind_id: str, count: int, words: list[str] | None = None) -> list[dict[str, Any]]:
    rng = random.Random(SEED + count)
    words = words or vocabulary(random.Random(SEED))
    return [memory_item(mind_id, i, rng, words) for i in range(count)]


def english_vocabulary() -> list[str]:
    """English words with their inflections, most frequent first: the words of the Python reference's
    text (`pydoc_data.topics`, fixed by the Python version), for what stemming changes; the synthetic
    words are random letters, which porter rarely stems."""
    from collections import Counter
    from pydoc_data.topics import topics

    counts = Counter(re.findall(r"[a-z]+", " ".join(topics.values()).lower()))
    return [word for word, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def build(base: Path, mind_id: str, items: list[dict[str, Any]]) -> tuple[float, float]:
    """Seconds (wall, CPU) to index every memory through the indexer's record path into one generation."""
    from synapse.index.stream import StreamBatch

    records = [stream_record(item, sequence=n) for n, item in enumerate(items)]
    started, started_cpu = time.perf_counter(), time.thread_time()
    batch = StreamBatch(base)
    try:
        for one in records:
            batch.stage(one)
        batch.publish()
    finally:
        batch.close()
    return time.perf_counter() - started, time.thread_time() - started_cpu


def prepared_index(mind_id: str, items: list[dict[str, Any]], rebuild: bool, into: Path) -> str:
    """Copy the cached index of this corpus into `into` (building it first if needed)."""
    cached = CACHE / f"v{CORPUS_VERSION}-{len(items)}"
    note = "from the cache"
    if rebuild or not (cached / mind_id / "CURRENT").is_file():
        shutil.rmtree(cached, ignore_errors=True)
        cached.mkdir(parents=True)
        seconds, _ = build(cached, mind_id, items)
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


# Function words and question marks, as an agent asks in its own words (they decide no match).
QUESTION_LEADS = [
    "what is the",
    "what does",
    "where is my",
    "how do i",
    "when did we",
    "which",
    "who is the",
    "tell me about",
    "do you remember the",
    "why is",
]
JOINERS = ["the", "of", "and", "for", "with", "a", "in"]


def best_match_queries(rng: random.Random, words: list[str]) -> list[tuple[str, str | None]]:
    """200 (query, tag filter) pairs of 3-10 terms (function words counted): common and rare words,
    half of them questions; every tenth with a tag filter."""
    common, rare = words[:200], words[200:6000]

    def word() -> str:
        return rng.choice(common) if rng.random() < 0.4 else rng.choice(rare)

    queries: list[tuple[str, str | None]] = []
    for i in range(200):
        terms = rng.randint(3, 10)
        parts = QUESTION_LEADS[i % len(QUESTION_LEADS)].split() if i % 2 == 0 else []
        content: list[str] = []
        while len(parts) + len(content) < terms or not content:
            if content and rng.random() < 0.2:
                content.append(rng.choice(JOINERS))
            content.append(word())
        text = " ".join(parts + content)
        queries.append((text + "?" if parts else text, rng.choice(TAGS) if i % 10 == 9 else None))
    return queries


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


RAW_SQL = (
    "SELECT d.id, -{table}.rank, snippet({table}, -1, '**', '**', '…', 16)"
    " FROM {table} JOIN docs d ON d.rowid = {table}.rowid"
    " WHERE {table} MATCH ? AND {table}.rank MATCH 'bm25({weights})'{tag}"
    " AND (d.expires_at IS NULL OR d.expires_at > ?)"
    " ORDER BY {table}.rank LIMIT {limit}"
)
RAW_TAG = " AND EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid)"
# Best match by hand: the candidates with a bit per clause matched, in coverage order (the module's
# COVERAGE_SQL, with only the columns a result needs), then the page's snippets.
RAW_COVERAGE_SQL = (
    "WITH hits AS MATERIALIZED (SELECT fts.rowid AS rowid, fts.rank AS rank, {mask} AS mask"
    " FROM fts WHERE fts MATCH ? AND fts.rank MATCH 'bm25({weights})')"
    " SELECT d.id, d.rowid, -h.rank, h.mask FROM hits h JOIN docs d ON d.rowid = h.rowid"
    " WHERE {tag}(d.expires_at IS NULL OR d.expires_at > ?)"
    " ORDER BY {covered} DESC, h.rank, d.priority_rank, d.updated_at DESC, d.id LIMIT 21"
)
# Coverage weighs each clause by how many memories it matches (`weights.clause_weight`): one count
# per clause, and the memory count from FTS5's averages record, before the statement above.
RAW_COUNT = "(SELECT count(*) FROM fts WHERE fts MATCH ?)"
RAW_ROWS = "SELECT block FROM fts_data WHERE id = 1"
RAW_CLAUSE = "(SELECT rowid FROM fts WHERE fts MATCH ?)"
RAW_COVERAGE_TAG = "EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid) AND "
RAW_SNIPPETS_SQL = (
    "SELECT fts.rowid, snippet(fts, -1, '**', '**', '…', 16) FROM fts"
    " WHERE fts MATCH ? AND fts.rowid IN ({marks})"
)
RAW_SNIPPETS = {n: RAW_SNIPPETS_SQL.format(marks=", ".join("?" * n)) for n in range(1, 21)}


class Plan(NamedTuple):
    """A query compiled once for the raw paths: its statement and parameters."""

    coverage: bool
    clauses: int
    sql: str
    params: tuple[Any, ...]
    match: str
    ranked_sql: str  # the reference: ORDER BY rank over the same expression
    ranked_params: tuple[Any, ...]
    counts_sql: str = ""  # coverage: each clause's count of matching memories, for its weight


def plan_of(text: str, tag: str | None) -> Plan:
    from synapse.index.schema import BM25_WEIGHTS
    from synapse.search.query import EXACT, Side, parse_query

    query = parse_query(text)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    ranked = RAW_SQL.format(weights=weights, tag=RAW_TAG if tag else "", limit=21, table="fts")
    ranked_params = (query.match, tag, QUERY_NOW) if tag else (query.match, QUERY_NOW)
    if query.exact:  # a prefix or a phrase: on the words as written (the shapes here are one term)
        assert isinstance(query.candidates, Side) and not query.by_coverage, text
        match = query.candidates.match
        exact = RAW_SQL.format(weights=weights, tag=RAW_TAG if tag else "", limit=21, table=EXACT)
        params = (match, tag, QUERY_NOW) if tag else (match, QUERY_NOW)
        return Plan(False, len(query.clauses), exact, params, match, exact, params)
    if not query.by_coverage:
        return Plan(False, len(query.clauses), ranked, ranked_params, query.match, ranked, ranked_params)
    bits = range(len(query.clauses))
    sql = RAW_COVERAGE_SQL.format(
        mask=" + ".join(f"((fts.rowid IN {RAW_CLAUSE}) << {b})" for b in bits),
        covered=" + ".join(f"(((h.mask >> {b}) & 1) * ?)" for b in bits),
        weights=weights,
        tag=RAW_COVERAGE_TAG if tag else "",
    )
    clauses = tuple(c.match for c in query.clauses)
    params = (*clauses, query.match, *((tag,) if tag else ()), QUERY_NOW)
    counts = "SELECT " + ", ".join([RAW_COUNT] * len(clauses))
    return Plan(True, len(query.clauses), sql, params, query.match, ranked, ranked_params, counts)


def raw_weights(db: Any, plan: Plan) -> list[int]:
    """The clauses' coverage weights, as the module computes them (weights.clause_weight)."""
    from synapse.search.weights import clause_weight

    (block,) = db.execute(RAW_ROWS).fetchone()
    rows, at = 0, 0
    while True:  # SQLite's varint (a mind's row count never needs the 9th byte)
        rows = (rows << 7) | (block[at] & 0x7F)
        if not block[at] & 0x80:
            break
        at += 1
    counts = db.execute(plan.counts_sql, plan.params[: plan.clauses]).fetchone()
    return [clause_weight(rows, n) for n in counts]


def query_paths(
    base: Path, mind_id: str, queries: list[tuple[str, str | None]]
) -> dict[str, Callable[[str, str | None], Any]]:
    """The module; raw SQL (each query compiled beforehand) on its own connection to the same
    generation; and the reference (ORDER BY rank alone) on a third. Two are interleaved at a time."""
    from synapse.index.generations import current_generation
    from synapse.index.readers import open_generation, reader
    from synapse.search.filters import SearchFilters
    from synapse.search.query import parse_query
    from synapse.search.ranking import index_hits

    generation = current_generation(base / mind_id)
    assert generation is not None
    plans = {(text, tag): plan_of(text, tag) for text, tag in queries}
    raw_db = open_generation(generation)
    ranked_db = open_generation(generation)

    def raw(text: str, tag: str | None) -> list[Any]:
        plan = plans[text, tag]
        if not plan.coverage:
            return raw_db.execute(plan.sql, plan.params).fetchall()
        weights = raw_weights(raw_db, plan)
        page = raw_db.execute(plan.sql, (*plan.params, *weights)).fetchall()[:20]
        if page:
            raw_db.execute(RAW_SNIPPETS[len(page)], (plan.match, *(row[1] for row in page))).fetchall()
        return page

    def ranked(text: str, tag: str | None) -> list[Any]:
        plan = plans[text, tag]
        return ranked_db.execute(plan.ranked_sql, plan.ranked_params).fetchall()

    def module(text: str, tag: str | None) -> Any:
        db = reader(mind_id, base)
        assert db is not None
        return index_hits(db, parse_query(text), SearchFilters(tag=tag), 20, 0, QUERY_NOW)[0]

    for text, tag in queries:  # the same results, in the same order
        hits, rows = module(text, tag), raw(text, tag)[:20]
        if plans[text, tag].coverage:  # a total order: the same ids
            assert [hit.id for hit in hits] == [row[0] for row in rows], (text, tag)
        else:  # FTS5's order; the module orders equal scores itself (SPEC §5): the same scores
            assert [hit.score for hit in hits] == [float(f"{row[1]:.6g}") for row in rows], (text, tag)
    return {"module": module, "raw": raw, "ranked": ranked}


def candidates(base: Path, mind_id: str, queries: list[tuple[str, str | None]]) -> list[int]:
    """How many memories each query's candidates' expression matches (before filters)."""
    from synapse.index.generations import current_generation
    from synapse.index.readers import open_generation

    generation = current_generation(base / mind_id)
    assert generation is not None
    db = open_generation(generation)
    plans = [plan_of(t, g) for t, g in queries]
    try:
        return [
            db.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",  # noqa: S608 (two constants)
                (plan.match,),
            ).fetchone()[0]
            for plan, table in ((p, "fts_exact" if p.sql.count("fts_exact") else "fts") for p in plans)
        ]
    finally:
        db.close()


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
    mind_id: str,
    items: list[dict[str, Any]],
    queries: list[tuple[str, str | None]],
    repeats: int,
    mode: str = "lexical",
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
        query = f"q={quote(text)}" + (f"&tag={tag}" if tag else "") + f"&mode={mode}"
        events.append(handler_event(Sample("GET", "/memory/search", as_agent=True, query=query)))
    # Moto holds the memories the queries return (hydration reads them by key; others cost nothing).
    hits = _hit_ids(mind_id, queries, mode)
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


def _hit_ids(mind_id: str, queries: list[tuple[str, str | None]], mode: str = "lexical") -> set[str]:
    """Every memory id the queries' first pages (and the few rounds after skipped hits) can return."""
    from synapse.index import vectors
    from synapse.index.readers import reader
    from synapse.search import fusion
    from synapse.search.filters import Mode, SearchFilters
    from synapse.search.query import parse_query
    from synapse.search.ranking import index_hits

    db = reader(mind_id)
    assert db is not None
    found: set[str] = set()
    for text, tag in queries:
        hits, _ = index_hits(db, parse_query(text), SearchFilters(tag=tag), 100, 0, QUERY_NOW)
        found.update(hit.id for hit in hits)
        if mode == "hybrid":
            scored, _ = fusion.hybrid_hits(
                db, parse_query(text), vectors.question_vector(text), SearchFilters(tag=tag), 100, 0,
                QUERY_NOW, Mode.HYBRID,
            )  # fmt: skip
            found.update(s.hit.id for s in scored)
    return found


def publishing(base: Path, mind_id: str, size: int) -> dict[str, float]:
    """Batches of 100 changes on the mind (compaction held off): median ms and bytes written per batch;
    then one compaction of their log into a new base, timed."""
    from synapse.index import generations
    from synapse.index.documents import Change, Doc
    from synapse.index.writer import compact

    from tests.support.indexing import apply_batch

    rng = random.Random(SEED + 7)
    words = vocabulary(random.Random(SEED))
    folder = base / mind_id
    generation = generations.current_generation(folder)
    assert generation is not None
    bound = generations.compaction_threshold(generation.stat().st_size)
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


@contextlib.contextmanager
def old_tokenizer() -> Any:
    """Indexes built meanwhile are of schema "2": the stems alone, without the words as written
    (`fts_exact`), the index format before the current one."""
    from synapse.index import schema

    saved = (
        schema.create_exact_words,
        schema._ADD_EXACT_WORDS,
        schema._DROP_EXACT_WORDS,
        schema.SCHEMA_VERSION,
    )
    schema.create_exact_words = lambda db: None  # type: ignore[assignment]
    schema._ADD_EXACT_WORDS = schema._DROP_EXACT_WORDS = "SELECT ?"  # the same statements, writing nothing
    schema.SCHEMA_VERSION = "2"
    try:
        yield
    finally:
        (
            schema.create_exact_words,
            schema._ADD_EXACT_WORDS,
            schema._DROP_EXACT_WORDS,
            schema.SCHEMA_VERSION,
        ) = saved


def index_bytes(folder: Path) -> tuple[int, int]:
    """The current generation's bytes (base and log), and its FTS5 index's own (`fts_data`)."""
    from synapse.index import generations
    from synapse.index.readers import open_generation

    generation = generations.current_generation(folder)
    assert generation is not None
    db = open_generation(generation)
    try:
        (fts_data,) = db.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name IN ('fts_data', 'fts_exact_data')"
        ).fetchone()
    finally:
        db.close()
    return generation.stat().st_size + generations.log_bytes(generation), fts_data


def tokenizers(mind_id: str, items: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per tokenizer: the median build (wall and CPU ms per 1,000 memories) and the bytes per 1,000."""
    rounds = 1 if len(items) >= 100_000 else 3
    out: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for run in range(rounds):
        for side in ("old", "new") if run % 2 == 0 else ("new", "old"):
            with tempfile.TemporaryDirectory(prefix="synapse-bench-tok-") as folder:
                with old_tokenizer() if side == "old" else contextlib.nullcontext():
                    wall, cpu = build(Path(folder), mind_id, items)
                size, fts_data = index_bytes(Path(folder) / mind_id)
            for name, value in (("wall", wall), ("cpu", cpu), ("bytes", size), ("fts_data", fts_data)):
                out[side].setdefault(name, []).append(value)
    per = 1000 / len(items)
    return {
        side: {
            "wall_ms": statistics.median(v["wall"]) * 1000 * per,
            "cpu_ms": statistics.median(v["cpu"]) * 1000 * per,
            "bytes": statistics.median(v["bytes"]) * per,
            "fts_data": statistics.median(v["fts_data"]) * per,
        }
        for side, v in out.items()
    }


@contextlib.contextmanager
def parts_timed(timings: dict[str, float]) -> Any:
    """Time the rebuild's parts (wall seconds, summed per part) while inside: the table's items
    (time spent getting the next one), indexing them (with that read), carry-over, publish; or the
    in-place upgrade step."""
    from synapse.index import generations, rebuild, schema

    saved = rebuild._memory_items, rebuild._index_all, rebuild._carry_over, generations.publish

    def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - started

        return timed_call

    def items(mind_id: str) -> Any:
        found = saved[0](mind_id)
        while True:
            started = time.perf_counter()
            try:
                item = next(found)
            except StopIteration:
                return
            finally:
                timings["read"] = timings.get("read", 0.0) + time.perf_counter() - started
            yield item

    rebuild._memory_items = items
    rebuild._index_all = wrap("index", saved[1])
    upgrade_in_place = schema.upgrade_in_place
    schema.upgrade_in_place = wrap("upgrade", upgrade_in_place)
    rebuild._carry_over = wrap("carry_over", saved[2])
    generations.publish = wrap("publish", saved[3])
    try:
        yield
    finally:
        rebuild._memory_items, rebuild._index_all, rebuild._carry_over, generations.publish = saved
        schema.upgrade_in_place = upgrade_in_place


def dynamodb_bytes(item: dict[str, Any]) -> int:
    """An item's size by DynamoDB's rules (names + values; a number ~1 byte per 2 digits + 1)."""

    def size(value: Any) -> int:
        if value is None or isinstance(value, bool):
            return 1
        if isinstance(value, str):
            return len(value.encode())
        if isinstance(value, int | float):
            return 1 + (len(str(value).replace(".", "").lstrip("-0")) + 1) // 2
        if isinstance(value, list):
            return 3 + sum(1 + size(v) for v in value)
        return 3 + sum(len(k.encode()) + 1 + size(v) for k, v in value.items())

    return sum(len(name.encode()) + size(value) for name, value in item.items())


def rebuilding(base: Path, mind_id: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """`rebuild.rebuild` of every memory into the mind's folder (its current generation there)."""
    from synapse.index import rebuild

    timings: dict[str, float] = {}
    with parts_timed(timings):
        started, started_cpu = time.perf_counter(), time.thread_time()
        rebuilt = rebuild.rebuild(mind_id, items=items, base=base)
        timings["total"] = time.perf_counter() - started
        timings["cpu"] = time.thread_time() - started_cpu
    assert rebuilt.indexed == len(items) and rebuilt.generation is not None
    table_bytes = sum(map(dynamodb_bytes, items))
    return {
        **timings,
        "carried": rebuilt.carried_over,
        "bytes": rebuilt.generation.stat().st_size,
        "table_bytes": table_bytes,
        "pages": -(-table_bytes // 1_000_000),
    }


def upgrading(size: int) -> dict[str, Any]:
    """One Writer batch of 100 changes on a schema-"1" generation of `size` memories, the same
    memories in the table (moto): the in-place upgrade, timed whole and by part."""
    from synapse.index import schema
    from synapse.index.documents import Change, Doc
    from synapse.index.readers import open_generation
    from synapse.storage import tables

    from tests.support.indexing import apply_batch

    mind_id = "m_benchUpgrade0000000000"
    items = corpus(mind_id, size)
    client = boto3.client("dynamodb", region_name="us-east-1")
    started = time.perf_counter()
    for at in range(0, len(items), 25):
        puts = [{"PutRequest": {"Item": tables.dump(item)}} for item in items[at : at + 25]]
        answer = client.batch_write_item(RequestItems={tables.memories_table(): puts})
        assert not answer.get("UnprocessedItems"), answer
    stored = time.perf_counter() - started
    # The table read alone, as the rebuild does it (moto: says little about DynamoDB).
    from synapse.index import rebuild

    pages = 0
    query_pages = tables.query_pages

    def counted(**params: Any) -> Any:
        nonlocal pages
        for page in query_pages(**params):
            pages += 1
            yield page

    tables.query_pages = counted
    try:
        started = time.perf_counter()
        read = sum(1 for _ in rebuild._memory_items(mind_id))
        read_seconds = time.perf_counter() - started
    finally:
        tables.query_pages = query_pages
    assert read == size
    rng = random.Random(SEED + 11)
    words = vocabulary(random.Random(SEED))
    with tempfile.TemporaryDirectory(prefix="synapse-bench-upgrade-") as folder:
        base = Path(folder)
        with old_tokenizer():
            build(base, mind_id, items)
        changes = []
        for j in range(100):
            i = rng.randrange(size) if j % 2 else size + j  # half updates, half new
            changes.append(Change.upsert(Doc.from_item(memory_item(mind_id, i, rng, words, version=2))))
        timings: dict[str, float] = {}
        with parts_timed(timings):
            started = time.perf_counter()
            published = apply_batch(mind_id, changes, base)
            timings["total"] = time.perf_counter() - started
        assert published is not None
        db = open_generation(published)
        try:
            assert schema.schema_of(db) == schema.SCHEMA_VERSION
            (live,) = db.execute("SELECT count(*) FROM docs WHERE deleted = 0").fetchone()
        finally:
            db.close()
    assert live == size + 50, live
    return {**timings, "stored": stored, "read_alone": read_seconds, "pages": pages}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def print_paths(label: str, stats: dict[str, Any], left: str, right: str, names: tuple[str, str]) -> None:
    for kind, unit in (("cpu", "CPU time"), ("wall", "wall clock")):
        a, b = stats[f"{left}_{kind}"], stats[f"{right}_{kind}"]
        print(
            f"  {label} {unit:10}  {names[0]} p50 {a[0]:.3f} ms p95 {a[1]:.3f} ms"
            f" | {names[1]} p50 {b[0]:.3f} ms p95 {b[1]:.3f} ms"
            f" | ratio p50 {a[0] / b[0]:.2f} p95 {a[1] / b[1]:.2f}"
            + ("  (target ≤ 1.5)" if kind == "cpu" and left == "module" else "")
        )


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
        words = vocabulary(random.Random(SEED))
        queries = fixed_queries(random.Random(SEED + 1), words)
        best = best_match_queries(random.Random(SEED + 2), words)
        paths = query_paths(base, mind_id, queries + best)
        covered = sum(plan_of(t, g).coverage for t, g in queries)
        stats = timed({"module": paths["module"], "raw": paths["raw"]}, list(queries), repeats)
        print(f"  (b) old query set: 200 queries, {covered} of them best match")
        print_paths("(b)", stats, "module", "raw", ("module", "raw FTS5"))
        found = sorted(candidates(base, mind_id, best))
        clauses = sorted(plan_of(t, g).clauses for t, g in best)
        print(
            f"  (b) best-match set: 200 queries of 3-10 terms ({clauses[100]} clauses at the median,"
            f" {clauses[0]}-{clauses[-1]}); candidates per query p50 {percentile(found, 50):,}"
            f" p95 {percentile(found, 95):,} of {size:,}"
        )
        stats = timed({"module": paths["module"], "raw": paths["raw"]}, list(best), repeats)
        print_paths("(b)", stats, "module", "raw", ("module", "raw FTS5"))
        reference = timed({"raw": paths["raw"], "ranked": paths["ranked"]}, list(best), repeats)
        print_paths("(b) reference", reference, "raw", "ranked", ("raw coverage", "ORDER BY rank only"))
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
        english = corpus(mind_id, size, english_vocabulary())
        for label, built in (("synthetic words", items), ("English words", english)):
            sides = tokenizers(mind_id, built)
            print(f"  (e) {label}, per 1,000 memories:")
            for side, name in (("old", "stems (schema 2)"), ("new", "stems + as written (3)")):
                one = sides[side]
                print(
                    f"      {name:28} {one['bytes'] / 1e3:,.0f} kB"
                    f" (FTS5 index {one['fts_data'] / 1e3:,.0f} kB),"
                    f" indexed in {one['wall_ms']:,.0f} ms (CPU {one['cpu_ms']:,.0f} ms)"
                )
            old, new = sides["old"], sides["new"]
            print(
                f"      new / old: size {new['bytes'] / old['bytes']:.3f}, FTS5 index"
                f" {new['fts_data'] / old['fts_data']:.3f}, indexing CPU {new['cpu_ms'] / old['cpu_ms']:.3f},"
                f" wall {new['wall_ms'] / old['wall_ms']:.3f}"
            )
        again = rebuilding(base, mind_id, items)
        print(
            f"  (f) rebuild({size:,} items): {ms(again['total'])} (CPU {ms(again['cpu'])}): index"
            f" {ms(again['index'])}, carry-over {ms(again['carry_over'])} ({again['carried']} carried),"
            f" publish {ms(again['publish'])}; {again['bytes'] / 1e6:.1f} MB"
        )
        print(
            f"      its DynamoDB read (not run): {again['table_bytes'] / 1e6:.1f} MB of items,"
            f" ~{again['pages']:,} Query pages of 1 MB"
            f" ({again['table_bytes'] / 4096 / 2:,.0f} read units, eventually consistent)"
        )


def hybrid_report(size: int, repeats: int) -> None:
    """(h): hybrid against lexical search at `size` memories, one run (see the module's docstring)."""
    from synapse.core.settings import get_settings
    from synapse.embedding import default_embedder, embed_query
    from synapse.index import vectors
    from synapse.index.readers import reader
    from synapse.search import fusion, newer
    from synapse.search.filters import Mode, SearchFilters
    from synapse.search.query import parse_query
    from synapse.search.ranking import index_hits

    from tests.support.events import EXAMPLE_MIND_ID

    mind_id = EXAMPLE_MIND_ID
    words = english_vocabulary()
    items = corpus(mind_id, size, words)
    default_embedder()
    with tempfile.TemporaryDirectory(prefix="synapse-hybrid-") as folder:
        base = Path(folder)
        os.environ["SYNAPSE_INDEX_DIR"] = str(base)
        get_settings.cache_clear()
        seconds, _ = build(base, mind_id, items)
        print(f"\n(h) {size:,} memories of English words, indexed with embeddings in {seconds:.1f} s"
              f" = {size / seconds:,.0f} memories/s (one thread)")  # fmt: skip
        queries = best_match_queries(random.Random(SEED + 2), words)
        db = reader(mind_id)
        assert db is not None
        started = time.perf_counter()
        assert vectors.matrix_of(db) is not None
        print(f"    the generation's vector matrix loaded in {(time.perf_counter() - started) * 1000:.1f} ms")

        def lexical(text: str, tag: str | None) -> Any:
            return index_hits(db, parse_query(text), SearchFilters(tag=tag), 20, 0, QUERY_NOW)

        def hybrid(text: str, tag: str | None, asked: str | None = None) -> Any:
            embed_query.cache_clear()
            query = parse_query(text)
            serves = fusion.semantic_applies(query, text, Mode.HYBRID)
            question = vectors.question_vector(text) if serves else None
            filters = SearchFilters(tag=tag)
            said = text if asked is None else asked
            return fusion.hybrid_hits(db, query, question, filters, 20, 0, QUERY_NOW, Mode.HYBRID, None, said)

        def unchecked(text: str, tag: str | None) -> Any:
            return hybrid(text, tag, asked="")  # no text: relevance's dependence check is off

        def unpulled(text: str, tag: str | None) -> Any:
            pulling = newer.with_newer_values
            newer.with_newer_values = lambda db, ranked, *_: ranked  # type: ignore[assignment]
            try:
                return hybrid(text, tag)
            finally:
                newer.with_newer_values = pulling  # type: ignore[assignment]

        def embedding(text: str, tag: str | None) -> Any:
            embed_query.cache_clear()
            return embed_query(text)

        paths = {"lexical": lexical, "hybrid": hybrid, "unchecked": unchecked, "unpulled": unpulled}
        stats = timed(paths, list(queries), repeats)
        print_paths("(h) module", stats, "hybrid", "lexical", ("hybrid", "lexical"))
        print_paths("(h) module", stats, "unchecked", "lexical", ("hybrid without the check", "lexical"))
        print_paths("(h) module", stats, "hybrid", "unpulled", ("hybrid", "without pulling newer values"))

        def as_stored(text: str, tag: str | None) -> Any:
            return default_embedder().embed([text])[0]

        alone = timed({"embed": embedding, "stored": as_stored}, list(queries), repeats)
        for name, what in (("embed", "the questions' model, int8"), ("stored", "the stored texts' model")):
            wall, cpu = alone[f"{name}_wall"], alone[f"{name}_cpu"]
            print(f"    the query's embedding alone, {what}: p50 {wall[0]:.2f} ms wall,"
                  f" CPU {cpu[0]:.2f} ms (p95 {wall[1]:.2f} ms)")  # fmt: skip
        e2e = {mode: end_to_end(mind_id, items, queries, repeats, mode) for mode in ("lexical", "hybrid")}
        lex, hyb = e2e["lexical"]["handler_wall"], e2e["hybrid"]["handler_wall"]
        print(f"    (h) handler end to end: hybrid p50 {hyb[0]:.2f} ms p95 {hyb[1]:.2f} ms, lexical p50"
              f" {lex[0]:.2f} ms p95 {lex[1]:.2f} ms: hybrid / lexical p50 {hyb[0] / lex[0]:.2f}"
              f" (target <= 2)")  # fmt: skip


def upgrade_report(size: int) -> None:
    up = upgrading(size)
    print(f"\n(g) upgrade: one Writer batch of 100 changes on a schema-2 generation of {size:,}")
    if "read" not in up:  # in place (schema.IN_PLACE_UPGRADES): nothing read from the table
        step, publish = up.get("upgrade", 0.0), up.get("publish", 0.0)
        print(
            f"    {ms(up['total'])} in all, in place (no table read): the upgrade step"
            f" {ms(step)}, publish and compaction {ms(publish)},"
            f" the rest (the batch, locks, open) {ms(up['total'] - step - publish)}"
        )
        return
    print(
        f"    {ms(up['total'])} in all: the table read (moto, {up['pages']} Query pages) {ms(up['read'])},"
        f" indexing {ms(up['index'] - up['read'])}, carry-over {ms(up['carry_over'])},"
        f" publish {ms(up['publish'])}, the rest (the batch, locks, open) "
        f"{ms(up['total'] - up['index'] - up['carry_over'] - up['publish'])}"
    )
    print(
        f"    the same read alone: {ms(up['read_alone'])} ({size:,} items put into moto in"
        f" {up['stored']:.1f} s); moto is not DynamoDB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="mind sizes, comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="runs per query; its median counts")
    parser.add_argument("--rebuild", action="store_true", help="build the indexes again, not from the cache")
    parser.add_argument("--upgrade-size", type=int, default=10000, help="(g)'s mind size; 0 skips it")
    parser.add_argument("--hybrid", type=int, default=10000, help="(h)'s mind size; 0 skips it")
    args = parser.parse_args()
    motofix.apply()
    with mock_aws():
        template.create_tables(
            boto3.client("dynamodb", region_name="us-east-1"),
            {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"},
        )
        for size in [int(s) for s in args.sizes.split(",") if s]:
            run_size(size, args.repeats, args.rebuild)
        if args.upgrade_size:
            upgrade_report(args.upgrade_size)
        if args.hybrid:
            hybrid_report(args.hybrid, args.repeats)


if __name__ == "__main__":
    main()
