"""`POST /memory/batch` against the same memories stored one by one, in one run of the local runner.

Starts `python -m infra.local_runner` (`--store`, moto by default: DynamoDB Local needs its jar),
per round on a fresh data dir (a small table: the moto snapshot saver rescans the whole table every
2 s while writes go on), creates a mind, then stores 100 new small memories (~100 bytes of content,
two tags) with 100 sequential `POST /memory`, 100 more with one `POST /memory/batch`, then replaces
those with another batch, each over HTTP with the Mind Key and started once the runner is idle
(its stream pump indexes what the last one wrote). It prints the seconds of each, median and best
round, and the ratios batch / sequential (issue 23's target: a batch of 100 in ≤ 0.3 s, well
under 100 sequential stores).

    nice .venv/bin/python bench/batch.py [--rounds 5] [--store moto]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner import create_mind  # noqa: E402 - bench/runner.py, this folder's shared runner helpers

from tests.support.runner import start_runner  # noqa: E402

SIZE = 100
CONTENT = "Prefers short answers with code first; uses Python 3.13 and ruff; deploys on Fridays only."


def memory(key: str, round_no: int = 0) -> dict[str, Any]:
    return {
        "category": "preference",
        "key": key,
        "content": f"{CONTENT} r{round_no}",
        "tags": ["style", "ops"],
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int, limit: float = 120.0) -> None:
    """Wait until the runner is idle (< 5 % of a core over 0.5 s): the stream pump indexes what the
    last measurement wrote, and that work must not land in the next one."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(0.5)
        if cpu_seconds(pid) - before < 0.025:
            return


def timed(pid: int, action: Callable[[], None]) -> float:
    settle(pid)
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def one_round(store: str, work: Path) -> tuple[float, float, float]:
    """On a fresh runner (a small table, so its snapshot saver stays cheap): seconds of 100
    sequential stores, of a batch creating 100, of a batch replacing those 100."""
    runner = start_runner(work / "data", work / "runner.log", {"SYNAPSE_LOCAL_STORE": store}, timeout=180)
    try:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {create_mind(runner)}"

        def post(path: str, body: dict[str, Any], expect: int) -> Any:
            answer = session.post(runner.url + path, json=body, timeout=120)
            if answer.status_code != expect:
                raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:300]}")
            return answer.json()

        def sequential() -> None:
            for i in range(SIZE):
                post("/memory", memory(f"seq_{i}"), 201)

        def batch(prefix: str, round_no: int, status: str) -> None:
            body = {"memories": [memory(f"{prefix}_{i}", round_no) for i in range(SIZE)]}
            answer = post("/memory/batch", body, 200)
            if answer["summary"][status] != SIZE:
                raise RuntimeError(f"batch: {answer['summary']}")

        pid = runner.process.pid
        post("/memory", memory("warm_up"), 201)  # the handlers' first import is not what we measure
        batch("warm_batch", 0, "created")
        return (
            timed(pid, sequential),
            timed(pid, lambda: batch("bat", 0, "created")),
            timed(pid, lambda: batch("bat", 1, "replaced")),
        )
    finally:
        runner.stop()
        store_line = runner.store.split(",")[0]
        print(f"  ({store_line})", end=" ", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--store", default="moto", help="SYNAPSE_LOCAL_STORE: moto or dynamodb-local")
    args = parser.parse_args()
    one_by_one, created, replaced = [], [], []
    for r in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="synapse-bench-batch-"))
        seq, new, again = one_round(args.store, work)
        one_by_one.append(seq)
        created.append(new)
        replaced.append(again)
        shutil.rmtree(work, ignore_errors=True)
        print(f"round {r + 1}: {seq:.3f} s / {new:.3f} s / {again:.3f} s", flush=True)
    print(
        f"\nlocal runner ({args.store}), {SIZE} memories of ~{len(CONTENT)} bytes, 2 tags, {args.rounds} "
        "rounds on fresh runners: median / best (background work only ever adds time)"
    )
    seq_mid, seq_best = statistics.median(one_by_one), min(one_by_one)
    print(f"{'100 sequential POST /memory':<40}{seq_mid:>8.3f} / {seq_best:.3f} s")
    for label, values in (("created", created), ("replaced", replaced)):
        mid, best = statistics.median(values), min(values)
        name = f"1 POST /memory/batch of 100, {label}"
        print(f"{name:<40}{mid:>8.3f} / {best:.3f} s   ratio {mid / seq_mid:.2f} / {best / seq_best:.2f}")


if __name__ == "__main__":
    main()
