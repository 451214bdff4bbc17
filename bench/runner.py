"""The local runner (`make run`) under load, on each embedded store, side by side in one run.

For each store (`SYNAPSE_LOCAL_STORE`: `dynamodb-local`, then `moto`) it starts
`python -m infra.local_runner` as a subprocess on a fresh data dir, creates a mind with the dev JWT,
seeds `--memories` memories through the HTTP API with the Mind Key (parallel clients), then measures
over HTTP, with 1 and with 8 clients:

- store: `POST /memory` of a new memory (201)
- get: `GET /memory/{id}` of a random seeded memory
- recall: `GET /memory/recall` (default limit 100)
- search: `GET /memory/search?q=<a word>` (words drawn from the seeding vocabulary)

and the index lag: while two writers keep storing, a probe stores a memory with a unique word and
searches for it every 20 ms; the lag is the time from its 2xx to the first search that finds it.
Each (operation, clients) cell runs for at most `--cell-seconds` (the slow store would otherwise take
an hour), so the sample counts are printed too. Latency is the client's (HTTP round trip included).

    nice .venv/bin/python bench/runner.py [--memories 10000] [--stores dynamodb-local,moto]
    make bench-runner BENCH_ARGS="--memories 2000"
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the e2e tests' runner harness starts the runner here too

from tests.support.runner import RunningService, start_runner  # noqa: E402

OPERATIONS = ("store", "get", "recall", "search")
CLIENTS = (1, 8)
CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
PRIORITIES = ("low", "normal", "normal", "normal", "high", "critical")
STEMS = [
    "docker",
    "swarm",
    "lambda",
    "dynamo",
    "sqlite",
    "python",
    "deploy",
    "schema",
    "index",
    "cache",
    "queue",
    "stream",
    "webhook",
    "token",
    "budget",
    "recall",
    "search",
    "mind",
    "agent",
    "memory",
    "tag",
    "cursor",
    "shard",
    "region",
    "bucket",
    "policy",
    "secret",
    "cluster",
    "network",
    "route",
    "gateway",
    "layer",
    "handler",
    "metric",
    "trace",
    "logger",
    "backup",
    "restore",
    "replica",
    "latency",
]
WORDS = [f"{stem}{suffix}" for stem in STEMS for suffix in ("", "s", "ing", "er", "ed")]
TAGS = [f"tag{n}" for n in range(30)]


class Client:
    """One requests session per thread, authenticated with the Mind Key."""

    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}"}
        self._local = threading.local()

    def session(self) -> requests.Session:
        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
        session: requests.Session = self._local.session
        return session

    def call(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        answer = self.session().request(method, self.url + path, json=body, headers=self.headers, timeout=120)
        if answer.status_code != expect:
            raise RuntimeError(f"{method} {path} answered {answer.status_code}: {answer.text[:300]}")
        return (
            answer.json() if answer.headers.get("Content-Type", "").startswith("application/json") else None
        )


def memory_body(rng: random.Random, key: str, extra: str = "") -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
    return {
        "category": rng.choice(CATEGORIES),
        "key": key,
        "content": f"{words} {extra}".strip(),
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
        "priority": rng.choice(PRIORITIES),
    }


def create_mind(runner: RunningService) -> str:
    answer = requests.post(
        runner.url + "/minds",
        json={"name": "Bench Mind"},
        headers={"Authorization": f"Bearer {runner.jwt}"},
        timeout=120,
    )
    answer.raise_for_status()
    key: str = answer.json()["mind_key"]["key"]
    return key


def seed(client: Client, count: int, parallel: int = 16) -> tuple[list[str], float]:
    """Store `count` memories with `parallel` clients; their ids and the seconds it took."""

    def one(number: int) -> str:
        rng = random.Random(number)
        stored: str = client.call("POST", "/memory", memory_body(rng, f"seed_{number:07d}"), expect=201)["id"]
        if number and number % 1000 == 0:
            print(f"  … {number} stored after {time.perf_counter() - started:.0f} s", flush=True)
        return stored

    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        ids = list(pool.map(one, range(count)))
    return ids, time.perf_counter() - started


@dataclass
class Cell:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    operation: Callable[[random.Random], None], clients: int, requests_each: int, seconds: float
) -> Cell:
    """`clients` threads each run `operation` up to `requests_each` times or until `seconds` pass."""
    cell = Cell()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def worker(number: int) -> None:
        rng = random.Random(number * 7919 + clients)
        for _ in range(requests_each):
            if time.perf_counter() > deadline:
                return
            started = time.perf_counter()
            try:
                operation(rng)
            except Exception:  # counted, shown beside the figures
                with lock:
                    cell.errors += 1
                continue
            with lock:
                cell.latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return cell


def operations(client: Client, ids: list[str]) -> dict[str, Callable[[random.Random], None]]:
    def store(rng: random.Random) -> None:
        client.call("POST", "/memory", memory_body(rng, f"bench_{uuid.uuid4().hex}"), expect=201)

    def get(rng: random.Random) -> None:
        client.call("GET", f"/memory/{rng.choice(ids)}")

    def recall(rng: random.Random) -> None:
        client.call("GET", "/memory/recall")

    def search(rng: random.Random) -> None:
        client.call("GET", f"/memory/search?q={rng.choice(WORDS)}")

    return {"store": store, "get": get, "recall": recall, "search": search}


def index_lag(client: Client, probes: int, give_up: float = 60.0) -> tuple[list[float], int]:
    """Seconds from a probe's 2xx to the first search finding it, while two writers keep storing;
    (lags, probes never found within `give_up` seconds)."""
    stop = threading.Event()

    def writer(number: int) -> None:
        rng = random.Random(1_000_000 + number)
        while not stop.is_set():
            try:
                client.call("POST", "/memory", memory_body(rng, f"load_{uuid.uuid4().hex}"), expect=201)
            except Exception:  # noqa: S112 - background load only
                continue

    writers = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(2)]
    for thread in writers:
        thread.start()
    lags: list[float] = []
    lost = 0
    rng = random.Random(42)
    try:
        for _ in range(probes):
            word = f"lagprobe{uuid.uuid4().hex[:12]}"
            client.call("POST", "/memory", memory_body(rng, f"probe_{word}", extra=word), expect=201)
            stored = time.perf_counter()
            while time.perf_counter() - stored < give_up:
                if client.call("GET", f"/memory/search?q={word}")["results"]:
                    lags.append(time.perf_counter() - stored)
                    break
                time.sleep(0.02)
            else:
                lost += 1
    finally:
        stop.set()
        for thread in writers:
            thread.join(timeout=120)
    return lags, lost


@dataclass
class StoreResult:
    store: str
    storage: str
    seed_seconds: float
    cells: dict[tuple[str, int], Cell]
    lags: list[float]
    lost: int


def bench_store(store: str, args: argparse.Namespace, workdir: Path) -> StoreResult:
    data_dir = workdir / store / "data"
    data_dir.mkdir(parents=True)
    runner = start_runner(data_dir, workdir / f"{store}.log", {"SYNAPSE_LOCAL_STORE": store}, timeout=180)
    print(f"[{store}] runner on {runner.url}: {runner.store}", flush=True)
    try:
        client = Client(runner.url, create_mind(runner))
        ids, seeded = seed(client, args.memories)
        print(f"[{store}] seeded {len(ids)} memories in {seeded:.1f} s", flush=True)
        ops = operations(client, ids)
        cells = {}
        for name in OPERATIONS:
            for clients in CLIENTS:
                each = max(5, args.requests // clients)
                cells[(name, clients)] = cell = measure(ops[name], clients, each, args.cell_seconds)
                print(f"[{store}] {name} x{clients}: {len(cell.latencies)} samples", flush=True)
        lags, lost = index_lag(client, args.probes)
        print(f"[{store}] index lag: {len(lags)} probes found, {lost} not within 60 s", flush=True)
        return StoreResult(store, runner.store, seeded, cells, lags, lost)
    finally:
        runner.stop()


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _ratio(slow: float | None, fast: float | None) -> str:
    return "-" if not slow or not fast else f"{slow / fast:.1f}x"


def table(results: list[StoreResult], memories: int) -> str:
    first, rest = results[0], results[1:]
    head = f"{'operation':<10}{'clients':>8}  " + "".join(f"{r.store + ' p50/p95 ms':>28}" for r in results)
    head += "".join(f"{r.store + '/' + first.store + ' p95':>26}" for r in rest)
    lines = [f"Local runner, a {memories}-memory mind, latency seen by the HTTP client", "", head]
    for name in OPERATIONS:
        for clients in CLIENTS:
            row = f"{name:<10}{clients:>8}  "
            for result in results:
                cell = result.cells[(name, clients)]
                shown = (
                    f"{_ms(cell.percentile(0.5))} / {_ms(cell.percentile(0.95))} (n={len(cell.latencies)})"
                )
                row += f"{shown:>28}"
            for result in rest:
                slow = result.cells[(name, clients)].percentile(0.95)
                row += f"{_ratio(slow, first.cells[(name, clients)].percentile(0.95)):>26}"
            lines.append(row)
    lag = f"{'index lag p95 (s)':<20}"
    for result in results:
        p95 = Cell(result.lags).percentile(0.95)
        lag += (
            f"{('-' if p95 is None else f'{p95:.2f}') + f' (n={len(result.lags)}, lost {result.lost})':>26}"
        )
    lines += ["", lag, ""]
    lines += [f"seeding {r.store}: {r.seed_seconds:.0f} s; store = {r.storage}" for r in results]
    errors = {r.store: sum(c.errors for c in r.cells.values()) for r in results}
    lines.append(f"errors: {errors}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--stores", default="dynamodb-local,moto")
    parser.add_argument("--requests", type=int, default=200, help="requests per cell, split among clients")
    parser.add_argument("--cell-seconds", type=float, default=30.0, help="time budget of one cell")
    parser.add_argument("--probes", type=int, default=20, help="index-lag samples")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # runners are stopped on the way out
    workdir = Path(tempfile.mkdtemp(prefix="synapse-bench-runner-"))
    results: list[StoreResult] = []
    try:
        for store in args.stores.split(","):
            results.append(bench_store(store, args, workdir))
            print(table(results[-1:], args.memories), flush=True)  # each store's figures as they come
            if args.json:
                args.json.write_text(json.dumps({r.store: raw(r) for r in results}, indent=1))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(table(results, args.memories))


def raw(result: StoreResult) -> dict[str, Any]:
    return {
        "storage": result.storage,
        "seed_seconds": result.seed_seconds,
        "cells": {f"{n}x{c}": sorted(cell.latencies) for (n, c), cell in result.cells.items()},
        "lags": result.lags,
        "lost": result.lost,
    }


if __name__ == "__main__":
    main()
