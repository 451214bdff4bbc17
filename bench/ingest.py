"""Ingest through the local API, before and after, side by side in one run (issue 43 items 1-2).

Each side is `python -m infra.local_runner` (moto by default) started from its own code: "before" is
`--baseline` (default 1312be9, main before this work) exported with `git archive` into a temp dir,
"after" the working tree (or `--after <ref>`, exported likewise); both run on this venv. On a fresh
data dir per side it creates a mind, then:

- single store: `--singles` sequential `POST /memory` of new ~150-character memories (p50, p95);
- batch: `--batches` `POST /memory/batch` of 100 new ~150-character memories, each started once the
  runner is idle (its stream pump has indexed what the last one wrote), so each is measured alone;
  beside its time, the runner's CPU seconds (all its threads: moto, the handlers, the pump) while
  it answered, and until it was idle again (the batch indexed): figures a busy machine moves far
  less than wall-clock times;
- stored-to-searchable under load: `--rate` memories a second (batches of 10 every 0.1 s) for
  `--seconds`; one memory of each batch holds a word of its own, and a prober searches for it
  every 50 ms from the batch's 2xx until a search finds it: that wait is its stored-to-searchable
  time (p50, p95, and how many never showed within 60 s). The rate reached is printed too, and the
  runner's CPU seconds per memory over the phase (100/s on 2 cores needs < 0.02).

    nice .venv/bin/python bench/ingest.py [--baseline 1312be9] [--seconds 60] [--rate 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner import create_mind  # noqa: E402 - bench/runner.py, this folder's shared runner helpers

from tests.support.runner import start_runner  # noqa: E402

BASELINE = "1312be9"
SPEAKERS = ("Nadia", "Oliver", "Grace", "Theo")
TOPICS = ("treehouse", "nursing school", "woodworking shop", "clinic shift", "road trip", "garden")
NOUNS = ("ladder", "roof", "budget", "schedule", "paperwork", "delivery")


def content(i: int) -> str:
    """~150 characters of a conversation turn, different for every i."""
    speaker, topic, noun = SPEAKERS[i % 4], TOPICS[i % 6], NOUNS[(i // 6) % 6]
    return (
        f"{speaker}: the {topic} plan looks fine to me, but the {noun} needs another pass before "
        f"Friday; remind me about item {i} when we talk next week."
    )


def cpu_seconds(pid: int) -> float:
    """The process's CPU seconds, every thread's (those that ended too: their time stays counted)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settle(pid: int, limit: float = 120.0) -> None:
    """Until the runner is idle (< 5 % of a core over 0.5 s): what the last step wrote is indexed."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(0.5)
        if cpu_seconds(pid) - before < 0.025:
            return


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


class Side:
    def __init__(self, url: str, key: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.counter = 0
        self.lock = threading.Lock()

    def next_ids(self, n: int) -> range:
        with self.lock:
            start = self.counter
            self.counter += n
        return range(start, start + n)

    def post(self, path: str, body: dict[str, Any], session: requests.Session | None = None) -> Any:
        answer = (session or self.session).post(self.url + path, json=body, timeout=120)
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"POST {path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()

    def batch_body(self, n: int, probe: str | None = None) -> dict[str, Any]:
        items = [{"category": "note", "key": f"turn_{i}", "content": content(i)} for i in self.next_ids(n)]
        if probe is not None:
            items[0]["content"] = f"{items[0]['content'][:120]} code word {probe}."
        return {"memories": items}


def measure(code: Path, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    env = {"SYNAPSE_LOCAL_STORE": args.store}
    runner = start_runner(work / "data", work / "runner.log", env, timeout=180, root=code)
    try:
        side = Side(runner.url, create_mind(runner))
        pid = runner.process.pid
        side.post("/memory", {"category": "note", "key": "warm_up", "content": content(10**6)})
        side.post("/memory/batch", side.batch_body(100))
        settle(pid)
        singles = []
        for i in side.next_ids(args.singles):
            start = time.perf_counter()
            side.post("/memory", {"category": "note", "key": f"turn_{i}", "content": content(i)})
            singles.append(time.perf_counter() - start)
        batches, answer_cpu, total_cpu = [], [], []
        for _ in range(args.batches):
            settle(pid)
            body = side.batch_body(100)
            cpu, start = cpu_seconds(pid), time.perf_counter()
            side.post("/memory/batch", body)
            batches.append(time.perf_counter() - start)
            answer_cpu.append(cpu_seconds(pid) - cpu)
            settle(pid)
            total_cpu.append(cpu_seconds(pid) - cpu)
        cpu = cpu_seconds(pid)
        loaded = sustained(side, args)
        loaded["cpu_per_memory"] = (cpu_seconds(pid) - cpu) / max(1, loaded["written"])
        return {
            "singles": singles,
            "batches": batches,
            "answer_cpu": answer_cpu,
            "total_cpu": total_cpu,
            **loaded,
        }
    finally:
        runner.stop()


def sustained(side: Side, args: argparse.Namespace) -> dict[str, Any]:
    """`args.rate` memories a second for `args.seconds`, in batches of 10 every 0.1 s (on 4 writer
    threads, so a slow answer does not hold the pace); each batch's probe is searched for until found."""
    per_batch = 10
    interval = per_batch / args.rate
    lags: list[float] = []
    missing: list[str] = []
    written = [0]
    errors = [0]  # batches answered with an error (an overloaded machine: the embedded store's timeouts)
    lock = threading.Lock()
    stop_at = time.monotonic() + args.seconds

    def probe(word: str, stored_at: float, session: requests.Session) -> None:
        while time.monotonic() - stored_at < 60:
            answer = session.get(
                side.url + "/memory/search", params={"q": word, "mode": "lexical"}, timeout=60
            )
            if answer.status_code == 200 and answer.json()["results"]:
                with lock:
                    lags.append(time.monotonic() - stored_at)
                return
            time.sleep(0.05)
        with lock:
            missing.append(word)

    def writer(offset: int) -> None:
        session = requests.Session()
        session.headers.update(side.session.headers)
        probes: list[threading.Thread] = []
        next_at = time.monotonic() + offset * interval
        while next_at < stop_at and time.monotonic() < stop_at:  # a slow answer ends the pace, not more
            time.sleep(max(0.0, next_at - time.monotonic()))
            word = "zq" + uuid.uuid4().hex[:10]
            try:
                side.post("/memory/batch", side.batch_body(per_batch, word), session)
            except (RuntimeError, requests.RequestException):  # counted, and the pace goes on
                with lock:
                    errors[0] += 1
                next_at += 4 * interval
                continue
            stored_at = time.monotonic()
            with lock:
                written[0] += per_batch
            prober_session = requests.Session()
            prober_session.headers.update(side.session.headers)
            thread = threading.Thread(target=probe, args=(word, stored_at, prober_session), daemon=True)
            thread.start()
            probes.append(thread)
            next_at += 4 * interval
        for thread in probes:
            thread.join()

    started = time.monotonic()
    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    return {
        "lags": lags,
        "missing": len(missing),
        "rate": written[0] / max(args.seconds, time.monotonic() - started),
        "written": written[0],
        "errors": errors[0],
    }


def export(ref: str, into: Path) -> Path:
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def report(sides: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    names = list(sides)
    load = os.getloadavg()[0]
    print(f"\nlocal runner ({args.store}); ~150-character memories; load average {load:.1f} at the end")
    print(f"{'figure':<52}" + "".join(f"{name:>14}" for name in names))

    def row(label: str, pick: Any, unit: str = "s") -> None:
        cells = "".join(f"{pick(sides[name]):>12.3f} {unit}" for name in names)
        print(f"{label:<52}{cells}")

    row(f"single POST /memory p50 ({args.singles} sequential)", lambda s: statistics.median(s["singles"]))
    row("single POST /memory p95", lambda s: quantile(s["singles"], 0.95))
    row(
        f"POST /memory/batch of 100 p50 ({args.batches}, runner idle)",
        lambda s: statistics.median(s["batches"]),
    )
    row("POST /memory/batch of 100 p95", lambda s: quantile(s["batches"], 0.95))
    row("  runner CPU for its answer, median", lambda s: statistics.median(s["answer_cpu"]))
    row("  runner CPU with its indexing, median", lambda s: statistics.median(s["total_cpu"]))
    row(
        f"stored-to-searchable p50 ({args.rate:.0f}/s asked, {args.seconds:.0f} s)",
        lambda s: quantile(s["lags"], 0.5),
    )
    row("stored-to-searchable p95", lambda s: quantile(s["lags"], 0.95))
    row("memories/s reached", lambda s: s["rate"], "/s")
    row("  runner CPU per memory stored and indexed", lambda s: s["cpu_per_memory"])
    row("probes not searchable within 60 s", lambda s: float(s["missing"]), " ")
    row("batches answered with an error", lambda s: float(s.get("errors", 0)), " ")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default=BASELINE, help="git ref of 'before' ('' to run after only)")
    parser.add_argument("--after", default="", help="git ref of 'after' (default: the working tree)")
    parser.add_argument("--store", default="moto")
    parser.add_argument("--singles", type=int, default=30)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    temp = Path(tempfile.mkdtemp(prefix="synapse-bench-ingest-"))
    try:
        sides: dict[str, dict[str, Any]] = {}
        if args.baseline:
            code = export(args.baseline, temp / "before-code")
            print(f"before = {args.baseline}, after = {args.after or 'the working tree'}", flush=True)
            sides["before"] = measure(code, args, temp / "before")
            print("  before: done", flush=True)
        after = export(args.after, temp / "after-code") if args.after else ROOT
        sides["after"] = measure(after, args, temp / "after")
        report(sides, args)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
