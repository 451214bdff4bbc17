"""Peak memory of the functions that read a mind's index (issue 43 item 4):
`python bench/memory_fit.py [--scenarios 100000x1,10000x32] [--requests 64] [--rebuild]`.

A scenario `NxM` is M minds of N memories each. Each mind is a synthetic corpus (bench/search.py's
English-word memories) indexed through the indexer's record path (`StreamBatch.stage`) once, then
cached under .cache/memory-fit/ (`--rebuild` builds again); minds of one size are copies of one
built generation under their own ids. Their vectors come from a stand-in embedder, unit vectors
seeded by each text's hash: what a container holds depends on how many vectors there are and their
size, not their values, and embedding 100,000 texts with the real model would take half an hour.

Then, for each scenario and each function that opens indexes (search, mcp, recall, store_memory),
a fresh child process imports the function's handler as Lambda does (the real model loads for the
questions and the writes' `similar`) and serves `--requests` requests spread round-robin over the
scenario's minds (hybrid searches, MCP `search` calls, recalls with `q`, stores of a new memory),
on in-process moto. Printed per function: its peak RSS (`ru_maxrss`) after the first request and
after all of them, against the function's MemorySize in template.yaml, and the bytes the index
cache says it holds (`readers.cached_bytes`, bounded by SYNAPSE_INDEX_CACHE_MB).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench_env import BENCH_ENV, moto_tables

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT), str(ROOT / "bench")]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

CACHE = ROOT / ".cache" / "memory-fit"
CACHE_VERSION = "1"  # bump when the corpus or the index layout changes
FUNCTIONS = {  # the function, its folder under functions/, and its template resource
    "search": ("search", "SearchFunction"),
    "mcp": ("mcp", "McpFunction"),
    "recall": ("recall", "RecallFunction"),
    "store_memory": ("store_memory", "StoreMemoryFunction"),
}
QUESTIONS = [
    "what does the garden look like in winter",
    "where did they travel last summer",
    "which book about history was recommended",
    "how is the new kitchen project going",
    "who plays music at the weekend",
    "what food does the family like",
]


class StandInEmbedder:
    """Unit vectors seeded by the text: the shape and size of the model's, none of its cost."""

    name = "bench-stand-in"

    def embed(self, texts: Any) -> Any:
        import numpy as np

        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, 384), dtype=np.float32)


def mind_id_of(size: int, n: int) -> str:
    return f"m_fit{size:07d}x{n:03d}"


def built_mind(size: int) -> Path:
    """The cached folder of one mind of `size` memories (built on first use)."""
    from search import build, corpus, english_vocabulary  # bench/search.py
    from synapse.index import vectors

    folder = CACHE / f"v{CACHE_VERSION}-{size}"
    mind_id = mind_id_of(size, 0)
    if (folder / mind_id / "CURRENT").is_file():
        return folder / mind_id
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    vectors.use_embedder(StandInEmbedder())
    try:
        seconds, _ = build(folder, mind_id, corpus(mind_id, size, english_vocabulary()))
    finally:
        vectors.use_embedder(None)
    print(f"    built a mind of {size:,} memories in {seconds:.0f} s", flush=True)
    return folder / mind_id


def copy_mind(source: Path, into: Path, mind_id: str) -> None:
    """The built mind under another id: its files, and the id its generations record."""
    target = into / mind_id
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".writer.lock"))
    for generation in target.iterdir():
        if generation.is_file() and generation.suffix == ".db":
            db = sqlite3.connect(generation)
            db.execute("UPDATE meta SET value = ? WHERE name = 'mind_id'", (mind_id,))
            db.commit()
            db.close()


def events_for(function: str, minds: list[str], requests: int) -> list[dict[str, Any]]:
    from tests.support.events import Sample, handler_event

    events = []
    for n in range(requests):
        question = QUESTIONS[n % len(QUESTIONS)]
        if function == "search":
            sample = Sample("GET", "/memory/search", as_agent=True, query=f"q={quote(question)}&mode=hybrid")
        elif function == "recall":
            sample = Sample("GET", "/memory/recall", as_agent=True, query=f"q={quote(question)}")
        elif function == "store_memory":
            body = {"category": "note", "key": f"fit_{n}", "content": f"{question}: a note written {n}"}
            sample = Sample("POST", "/memory", as_agent=True, body=body)
        else:
            rpc = {"name": "search", "arguments": {"query": question}}
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": rpc}
            headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
            sample = Sample("POST", "/mcp", as_agent=True, body=body, headers=headers)
        event = handler_event(sample)
        event["requestContext"]["authorizer"]["lambda"]["mind_id"] = minds[n % len(minds)]
        events.append(event)
    return events


def peak_mb() -> float:
    """This process's peak resident set (VmHWM: unlike ru_maxrss, not inherited from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(function: str, index_dir: str, minds: list[str], requests: int) -> dict[str, Any]:
    """One function's handler in this fresh process, serving `requests` requests over `minds`."""
    os.environ["SYNAPSE_INDEX_DIR"] = index_dir
    from infra.gateway import LambdaContext

    folder, resource_name = FUNCTIONS[function]
    started = peak_mb()
    with moto_tables():
        sys.path.insert(0, str(ROOT / "functions" / folder))
        import app  # type: ignore[import-not-found]
        from synapse.index import readers
        from synapse.storage import tables

        for mind_id in minds:  # the minds' own items: reads and writes check the mind exists
            stamp = "2026-11-01T00:00:00.000Z"
            item = {**tables.mind_key(mind_id), "id": mind_id, "owner": "user-1", "name": mind_id,
                    "created_at": stamp, "updated_at": stamp}  # fmt: skip
            tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))
        context = LambdaContext(resource_name)
        statuses: dict[int, int] = {}
        first = 0.0
        for n, event in enumerate(events_for(function, minds, requests)):
            with contextlib.redirect_stdout(io.StringIO()):  # the metrics line Lambda would log
                response = app.handler(event, context)
            status = response["statusCode"]
            statuses[status] = statuses.get(status, 0) + 1
            if status >= 300 and statuses[status] == 1:
                print(response.get("body", "")[:300], file=sys.stderr)
            if n == 0:
                first = peak_mb()
        return {
            "imported_mb": started,
            "first_mb": first,
            "peak_mb": peak_mb(),
            "cached_mb": readers.cached_bytes() / 2**20,
            "statuses": statuses,
        }


def memory_size(resource_name: str) -> int:
    from infra import template

    document = template.load()
    found = document["Resources"][resource_name]["Properties"].get("MemorySize")
    return int(found or document["Globals"]["Function"]["MemorySize"])


def scenario(size: int, count: int, requests: int, functions: list[str]) -> None:
    source = built_mind(size)
    with tempfile.TemporaryDirectory(prefix="synapse-fit-") as folder:
        minds = [mind_id_of(size, n) for n in range(count)]
        for mind_id in minds:
            copy_mind(source, Path(folder), mind_id)
        print(f"\n{count} mind(s) of {size:,} memories, {requests} requests per function:")
        print(f"    {'function':<14} {'MemorySize':>10} {'after import':>13} {'1st request':>12}"
              f" {'peak':>8} {'margin':>8} {'index cache':>12}  answers")  # fmt: skip
        for function in functions:
            command = [sys.executable, __file__, "--child", function, "--index-dir", folder,
                       "--minds", ",".join(minds), "--requests", str(requests)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
            if done.returncode != 0:
                print(f"    {function}: failed\n{done.stderr[-3000:]}")
                continue
            got = json.loads(done.stdout.strip().splitlines()[-1])
            limit = memory_size(FUNCTIONS[function][1])
            print(f"    {function:<14} {limit:>7} MB {got['imported_mb']:>10.0f} MB"
                  f" {got['first_mb']:>9.0f} MB"
                  f" {got['peak_mb']:>5.0f} MB {limit - got['peak_mb']:>5.0f} MB {got['cached_mb']:>9.1f} MB"
                  f"  {got['statuses']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="100000x1,10000x32")
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--functions", default=",".join(FUNCTIONS))
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--child")
    parser.add_argument("--index-dir")
    parser.add_argument("--minds")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.index_dir, args.minds.split(","), args.requests)))
        return
    if args.rebuild:
        shutil.rmtree(CACHE, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}; SYNAPSE_INDEX_CACHE_MB"
          f" {os.environ.get('SYNAPSE_INDEX_CACHE_MB', 'default')}")  # fmt: skip
    for spec in args.scenarios.split(","):
        size, count = (int(part) for part in spec.split("x"))
        scenario(size, count, args.requests, args.functions.split(","))


if __name__ == "__main__":
    main()
