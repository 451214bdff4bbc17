"""`synapse backup` and `synapse restore` of a large mind against the local runner (`make run`).

Starts `python -m infra.local_runner` on a fresh data dir (DynamoDB Local when java is there),
seeds a mind with `--memories` varied memories through `POST /memory/batch` (every tenth one
changed once more, so it has two revisions), then times, as a user runs them, the installed
console script:

- backup: `synapse backup --mind M -o FILE` (every page, header to trailer)
- restore: `synapse restore FILE --new-mind NAME` (the file checked, then sent in chunks)
- restore again: the same file into that mind (the job says done: nothing is written)

and prints memories per second, the file's size, each CLI run's peak RSS and the runner's peak RSS
during each step (its VmHWM, reset before the step), and whether the restored mind shows every
memory as the source does. No wall-clock assertion: it prints figures.

    nice .venv/bin/python bench/backup.py [--memories 5000] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the e2e tests' runner harness starts the runner here too

from synapse_client import Synapse  # noqa: E402

from bench.export_import import memory  # noqa: E402
from tests.support.runner import start_runner  # noqa: E402

CLI = Path(sys.executable).parent / "synapse"


def snapshot(client: Synapse) -> list[dict[str, Any]]:
    found = client.iter_memories(include_expired=True, limit=100)
    return sorted((m.model_dump(mode="json", exclude={"mind_id"}) for m in found), key=lambda m: m["id"])


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _reset_peak(pid: int) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def cli(*args: str, url: str, jwt: str, runner_pid: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_")}
    env |= {"SYNAPSE_URL": url, "SYNAPSE_TOKEN": jwt, "SYNAPSE_CONFIG": os.devnull}
    _reset_peak(runner_pid)
    command = (
        ["/usr/bin/time", "-f", "%M", str(CLI), *args]
        if Path("/usr/bin/time").exists()
        else [str(CLI), *args]
    )
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"synapse {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    lines = done.stderr.strip().splitlines()
    cli_peak = int(lines[-1]) if command[0] == "/usr/bin/time" and lines[-1].isdigit() else None
    return {
        "seconds": elapsed,
        "cli_peak_rss_kb": cli_peak or resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        "runner_peak_rss_kb": _peak_rss_kb(runner_pid),
        "said": "; ".join(line for line in lines if not line.isdigit()) + done.stdout.strip(),
    }


def seed(url: str, key: str, count: int) -> float:
    with Synapse(url, mind_key=key) as agent:
        started = time.perf_counter()
        for start in range(0, count, 100):
            answer = agent.remember_batch([memory(n) for n in range(start, min(count, start + 100))])
            assert answer.summary.failed == 0, answer.results
        changed = [{**memory(n), "content": f"changed #{n}"} for n in range(0, count, 10)]
        for start in range(0, len(changed), 100):
            agent.remember_batch(changed[start : start + 100])
        return time.perf_counter() - started


def run(url: str, jwt: str, count: int, base: Path, runner_pid: int, store: str) -> dict[str, Any]:
    with Synapse(url, token=jwt) as person:
        made = person.create_mind("Backup source")
    seeded = seed(url, made.mind_key.key or "", count)
    print(f"seeded {count} memories in {seeded:.1f} s", file=sys.stderr)
    out = base / "mind.backup.jsonl"
    steps: dict[str, dict[str, Any]] = {}
    steps["backup"] = cli(
        "backup", "--mind", made.mind.id, "-o", str(out), url=url, jwt=jwt, runner_pid=runner_pid
    )
    print(f"backup: {steps['backup']['seconds']:.1f} s", file=sys.stderr)
    steps["restore"] = cli(
        "restore", str(out), "--new-mind", "Backup copy", url=url, jwt=jwt, runner_pid=runner_pid
    )
    print(f"restore: {steps['restore']['seconds']:.1f} s", file=sys.stderr)
    target = steps["restore"]["said"].split("created mind ", 1)[1].split(";", 1)[0]
    steps["restore_again"] = cli(
        "restore", str(out), "--mind", target, url=url, jwt=jwt, runner_pid=runner_pid
    )
    with (
        Synapse(url, token=jwt, mind_id=made.mind.id) as source,
        Synapse(url, token=jwt, mind_id=target) as copy,
    ):
        identical = snapshot(source) == snapshot(copy)
    figures: dict[str, Any] = {
        "store": store,
        "memories": count,
        "backup_lines": sum(1 for _ in out.open("rb")),
        "backup_file_bytes": out.stat().st_size,
        "seed_s": round(seeded, 2),
        "identical": identical,
    }
    for name, step in steps.items():
        figures[f"{name}_s"] = round(step["seconds"], 2)
        figures[f"{name}_memories_per_s"] = round(count / step["seconds"])
        figures[f"{name}_cli_peak_rss_mb"] = round(step["cli_peak_rss_kb"] / 1024, 1)
        figures[f"{name}_runner_peak_rss_mb"] = round(step["runner_peak_rss_kb"] / 1024, 1)
    return figures


def main() -> None:
    options = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    options.add_argument("--memories", type=int, default=5000)
    options.add_argument("--json", type=Path, help="also write the figures here")
    args = options.parse_args()
    with tempfile.TemporaryDirectory(prefix="synapse-bench-") as scratch:
        base = Path(scratch)
        service = start_runner(base / "data", base / "runner.log", timeout=120)
        try:
            figures = run(service.url, service.jwt, args.memories, base, service.process.pid, service.store)
        finally:
            service.stop()
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
