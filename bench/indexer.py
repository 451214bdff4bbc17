"""Indexer throughput model: `python bench/indexer.py [--minds 2000] [--batches 10] [--batch-size 100]
[--baseline main] [--scale 1.0]`.

The real indexer (`synapse.index.stream.index_stream`) on local disk, with EFS-like latency injected
where it matters, at many minds: every mind is seeded with a published index (5 memories, no latency),
then `--batches` stream batches of `--batch-size` records run one after another (one shard at
ParallelizationFactor 1), each record of a different mind (as at 1M minds): 50 % new memories, 40 %
updates, 10 % removals (a removal makes the indexer ask DynamoDB whether the mind still exists: a
GetItem, stubbed to answer yes after `DYNAMO_MS`).

Injected latency (a sleep in the calling thread, so threads overlap it as they would on EFS), per call
on a path under the index root. AWS publishes EFS General Purpose latencies as "as low as" ~250 µs per
read operation and ~2.7 ms per write operation (Regional file systems; One Zone writes ~1.6 ms)
(https://docs.aws.amazon.com/efs/latest/ug/performance.html, Performance summary table). Each NFS
metadata round trip is modelled at 1 ms (open — close-to-open revalidation —, stat, mkdir, listdir,
an fcntl lock or unlock, which NFSv4 sends to the server), each durable write at 3 ms (fsync, rename,
unlink, utime): the floors rounded up, as Lambda's NFS client sees more than the floor. SQLite's own
calls cannot be wrapped from Python: each `sqlite3.connect` to a file under the root is charged the
2 opens (database, log) and, through the default `unix` VFS, the 7 fcntl lock calls SQLite makes in a
batch's life (counted with strace on this machine; 0 through `unix-none`). SQLite's reads and
buffered writes, and its stats of the files, are not charged (the same both ways). These figures
reproduce issue 23's estimate for the old path (3 fsyncs, 9 locks, 14 opens ≈ 34 ms a mind).

"Before" is the indexer at `--baseline` (a git ref, exported with `git archive` to a temp folder),
"after" the working tree's; each runs in a child process of this run with the same seed, corpus,
batches and latency model, and the two resulting indexes are compared (every mind's documents: id,
version, deleted) — they must be identical. Printed: records/s per shard (wall clock), the calls per
mind per batch, CPU per record and the CPU-bound ceiling at the IndexerFunction's memory size
(Lambda gives 1 vCPU at 1,769 MB, proportionally less below), then the ratios.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import fcntl
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from bench_env import index_module

ROOT = Path(__file__).resolve().parent.parent
MEMORIES_PER_MIND = 5
DYNAMO_MS = 4.0  # a GetItem from Lambda in the same region
METADATA_MS = 1.0
WRITE_MS = 3.0
SQLITE_OPENS = 2
SQLITE_LOCKS = 7
LAMBDA_MEMORY_MB = 1769
VCPU_AT_1769_MB = 1.0


class Model:
    """Counts and charges the file system calls made under `root`."""

    COSTS: ClassVar[dict[str, float]] = {
        **dict.fromkeys(["open", "stat", "mkdir", "lock", "list"], METADATA_MS),
        **dict.fromkeys(["fsync", "rename", "unlink", "utime"], WRITE_MS),
        "dynamodb": DYNAMO_MS,
    }

    def __init__(self, root: Path, scale: float) -> None:
        self.root = str(root)
        self.scale = scale
        self.counts: dict[str, int] = dict.fromkeys(self.COSTS, 0)
        self._guard = threading.Lock()
        self._saved: list[tuple[Any, str, Any]] = []

    def charge(self, kind: str, n: int = 1) -> None:
        with self._guard:
            self.counts[kind] += n
        time.sleep(self.COSTS[kind] * n * self.scale / 1000)

    def mine(self, path: Any) -> bool:
        try:
            text = os.fsdecode(path) if not isinstance(path, int) else os.readlink(f"/proc/self/fd/{path}")
        except (TypeError, OSError):
            return False
        return text.removeprefix("file:").startswith(self.root)

    def _wrap(self, owner: Any, name: str, kind: str, *, count: int = 1, always: bool = False) -> None:
        real = getattr(owner, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if always or (args and self.mine(args[0])):
                self.charge(kind, count)
            return real(*args, **kwargs)

        self._saved.append((owner, name, real))
        setattr(owner, name, wrapped)

    def install(self) -> None:
        for owner in (builtins, io):
            self._wrap(owner, "open", "open")
        for name, kind in [("open", "open"), ("stat", "stat"), ("mkdir", "mkdir"), ("listdir", "list")]:
            self._wrap(os, name, kind)
        for name, kind in [("scandir", "list"), ("replace", "rename"), ("rename", "rename")]:
            self._wrap(os, name, kind)
        for name, kind in [("unlink", "unlink"), ("utime", "utime"), ("fsync", "fsync")]:
            self._wrap(os, name, kind)
        self._wrap(fcntl, "lockf", "lock", always=True)
        self._wrap(fcntl, "flock", "lock", always=True)
        real_connect = sqlite3.connect

        def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
            if self.mine(database):
                self.charge("open", SQLITE_OPENS)
                if "vfs=unix-none" not in os.fsdecode(database):
                    self.charge("lock", SQLITE_LOCKS)
            return real_connect(database, *args, **kwargs)

        self._saved.append((sqlite3, "connect", real_connect))
        sqlite3.connect = connect  # type: ignore[assignment]

    def uninstall(self) -> None:
        for owner, name, real in reversed(self._saved):
            setattr(owner, name, real)
        self._saved.clear()


def _item(mind: str, n: int, version: int) -> dict[str, Any]:
    return {
        "pk": mind,
        "sk": f"MEM#mem_{n:06d}",
        "id": f"mem_{n:06d}",
        "mind_id": mind,
        "category": "fact",
        "key": f"key {n}",
        "content": f"memory {n} of {mind}, version {version}: the quick brown fox jumps over the lazy dog",
        "tags": ["bench", f"t{n % 7}"],
        "priority": "normal",
        "updated_at": f"2026-03-01T12:{version % 60:02d}:00.000Z",
        "version": version,
    }


def _digest(root: Path) -> list[list[Any]]:
    generations = index_module("generations")

    rows: list[list[Any]] = []
    for folder in sorted(root.iterdir()):
        current = generations.current_generation(folder)
        if current is None:
            continue
        db = generations.open_read_only(current)
        try:
            found = db.execute("SELECT id, version, deleted FROM docs ORDER BY id").fetchall()
        finally:
            db.close()
        rows.extend([folder.name, *row] for row in found)
    return rows


def _process_io() -> dict[str, int]:
    """This process's bytes passed to read()/write() so far (Linux): the index files' traffic, which
    SQLite's own C calls make and Python cannot wrap. Nothing else reads or writes during a batch."""
    lines = Path("/proc/self/io").read_text().splitlines()
    return {name: int(value) for name, value in (line.split(": ") for line in lines)}


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One side of the comparison, in this process: seed, then the measured batches under the model."""
    root = Path(tempfile.mkdtemp(prefix="indexer-bench-"))
    os.environ["SYNAPSE_INDEX_DIR"] = str(root)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    orphans, stream = index_module("orphans"), index_module("stream")

    from tests.support.streams import stream_record

    model = Model(root, args.scale)

    def mind_exists(mind_id: str) -> bool:
        if model._saved:
            model.charge("dynamodb")
        return True

    orphans.mind_exists = mind_exists  # type: ignore[assignment]
    minds = [f"m_{n:06d}" for n in range(args.minds)]
    sequence = 0
    seed: list[dict[str, Any]] = []
    for mind in minds:
        for n in range(MEMORIES_PER_MIND):
            seed.append(stream_record(_item(mind, n, 1), None, sequence := sequence + 1))
    for start in range(0, len(seed), args.batch_size):
        assert stream.index_stream({"Records": seed[start : start + args.batch_size]}) == {
            "batchItemFailures": []
        }
    batches = []
    for b in range(args.batches):
        records = []
        for i in range(args.batch_size):
            k = b * args.batch_size + i
            mind = minds[k % len(minds)]
            kind = k % 10
            if kind < 5:  # a new memory
                records.append(stream_record(_item(mind, 100 + b, 1), None, sequence := sequence + 1))
            elif kind < 9:  # an update of a seeded one
                n = kind % MEMORIES_PER_MIND
                records.append(
                    stream_record(_item(mind, n, 2 + b), _item(mind, n, 1 + b), sequence := sequence + 1)
                )
            else:  # a removal
                records.append(
                    stream_record(None, _item(mind, MEMORIES_PER_MIND - 1, 1), sequence := sequence + 1)
                )
        batches.append(records)
    model.install()
    io_before = _process_io()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        for records in batches:
            assert stream.index_stream({"Records": records}) == {"batchItemFailures": []}
    finally:
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        model.uninstall()
    io_after = _process_io()
    total = sum(map(len, batches))
    mind_batches = sum(len({r["dynamodb"]["Keys"]["pk"]["S"] for r in records}) for records in batches)
    return {
        "records": total,
        "wall_s": wall,
        "cpu_s": cpu,
        "per_mind_batch": {kind: count / mind_batches for kind, count in model.counts.items()},
        "bytes_written": io_after["wchar"] - io_before["wchar"],
        "bytes_read": io_after["rchar"] - io_before["rchar"],
        "digest": _digest(root),
    }


def _run_side(code: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{ROOT}"}
    command = [sys.executable, __file__, "--child", "--out", str(out), "--minds", str(args.minds)]
    command += [
        "--batches",
        str(args.batches),
        "--batch-size",
        str(args.batch_size),
        "--scale",
        str(args.scale),
    ]
    subprocess.run(command, env=env, check=True)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _line(name: str, side: dict[str, Any]) -> str:
    per = side["per_mind_batch"]
    rate = side["records"] / side["wall_s"]
    cpu_ms = 1000 * side["cpu_s"] / side["records"]
    ceiling = VCPU_AT_1769_MB * LAMBDA_MEMORY_MB / 1769 / (side["cpu_s"] / side["records"])
    return (
        f"{name:<7} {rate:9.1f} rec/s/shard  {1000 / rate:6.2f} ms/rec  per mind per batch: "
        f"fsync {per['fsync']:.2f}  locks {per['lock']:.2f}  opens {per['open']:.2f}  stats {per['stat']:.2f}"
        f"  renames {per['rename']:.2f}  mkdir {per['mkdir']:.2f}  | CPU {cpu_ms:.2f} ms/rec"
        f" (ceiling {ceiling:,.0f} rec/s at {LAMBDA_MEMORY_MB} MB)"
        f" | per record: {side['bytes_written'] / side['records'] / 1000:.1f} kB written,"
        f" {side['bytes_read'] / side['records'] / 1000:.1f} kB read"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minds", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--baseline", default="main", help="git ref of the 'before' indexer")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every injected latency")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # powertools' metric flushes
            result = child(args)
        Path(args.out).write_text(json.dumps(result))
        return
    with tempfile.TemporaryDirectory(prefix="indexer-bench-code-") as temp:
        before_code = Path(temp) / "before"
        before_code.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline, "layers/synapse"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(before_code)], input=archive, check=True)
        before = _run_side(before_code / "layers" / "synapse", args, Path(temp) / "before.json")
        after = _run_side(ROOT / "layers" / "synapse", args, Path(temp) / "after.json")
    print(
        f"{args.minds} minds, {args.batches} batches of {args.batch_size} records (one per mind),"
        f" latency x{args.scale}; before = {args.baseline}, after = working tree"
    )
    print(_line("before", before))
    print(_line("after", after))
    speedup = (after["records"] / after["wall_s"]) / (before["records"] / before["wall_s"])
    ratios = {k: after["per_mind_batch"][k] / v for k, v in before["per_mind_batch"].items() if v}
    print(
        f"ratio   {speedup:.1f}x records/s per shard; calls after/before: "
        + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
    )
    same = before["digest"] == after["digest"]
    print(f"indexes identical (id, version, deleted of every mind's documents): {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
