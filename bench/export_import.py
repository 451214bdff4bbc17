"""`synapse export` and `synapse import` of a large mind against the local runner (`make run`).

Starts `python -m infra.local_runner` on a fresh data dir (DynamoDB Local when java is there),
seeds a mind with `--memories` varied memories through `POST /memory/batch` (the Python client),
then times, as a user runs them, the installed console script:

- export: `synapse export --out FILE` (every memory, expired ones too, following cursors)
- import: `synapse import FILE` into an empty mind (100 per batch request, one at a time, the default)
- import, parallel: `synapse import FILE --parallel 4` (4 batch requests in flight) into another one
- re-import: the same file again into that mind, `--parallel 4` (every memory replaced, none duplicated)

and checks that each imported mind holds every memory with the same category, key, content, tags,
priority, confidence and expires_at, but the expired ones (a tenth, expiring as they are seeded),
which an import skips and counts.

    nice .venv/bin/python bench/export_import.py [--memories 5000] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the e2e tests' runner harness starts the runner here too

from synapse_client import Synapse  # noqa: E402

from tests.support.runner import start_runner  # noqa: E402

CLI = Path(sys.executable).parent / "synapse"
COMPARED = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")
CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
PRIORITIES = ("critical", "high", "normal", "normal", "low")
WORDS = ["berlin", "docker", "deploy", "kafka", "swarm", "postgres", "neovim"]
WORDS += ["rust", "python", "coffee", "tea", "cat", "garden"]


def expired(n: int) -> bool:
    """Memory n expires as it is stored (an expiry of now: a past one is refused)."""
    return n % 10 == 1


def memory(n: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "category": CATEGORIES[n % len(CATEGORIES)],
        "key": f"memory_{n:05d}",
        "content": " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 12)) + f" #{n}",
        "priority": PRIORITIES[n % len(PRIORITIES)],
        "confidence": round((n % 10) / 10, 1),
        "tags": [WORDS[n % len(WORDS)], WORDS[(n // 3) % len(WORDS)]],
    }
    if expired(n):
        body["expires_at"] = datetime.now(UTC).isoformat()
    elif n % 10 == 2:
        body["expires_at"] = "2031-06-01T12:00:00Z"
    return body


def snapshot(client: Synapse) -> dict[tuple[str, str], tuple[Any, ...]]:
    found = client.iter_memories(include_expired=True, limit=100)
    return {(m.category, m.key): tuple(getattr(m, f) for f in COMPARED) for m in found}


def cli(*args: str, url: str, key: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_")}
    env |= {"SYNAPSE_URL": url, "SYNAPSE_MIND_KEY": key, "SYNAPSE_CONFIG": os.devnull}
    started = time.perf_counter()
    done = subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"synapse {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stdout.strip()


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
            figures = run(service.url, service.jwt, args.memories, base, service.store)
        finally:
            service.stop()
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def run(url: str, jwt: str, count: int, base: Path, store: str) -> dict[str, Any]:
    with Synapse(url, token=jwt) as person:
        made = [person.create_mind(name) for name in ("Export source", "Import serial", "Import parallel")]
    source, serial, parallel = (m.mind_key.key or "" for m in made)
    with Synapse(url, mind_key=source) as agent:
        started = time.perf_counter()
        for start in range(0, count, 100):
            answer = agent.remember_batch([memory(n) for n in range(start, min(count, start + 100))])
            assert answer.summary.failed == 0, answer.results
        seeded = time.perf_counter() - started
        print(f"seeded {count} memories in {seeded:.1f} s", file=sys.stderr)
        before = snapshot(agent)
    out = base / "mind.jsonl"
    timed: dict[str, tuple[float, str]] = {}
    steps = (
        ("export", ("export", "--out", str(out)), source),
        ("import_serial", ("import", str(out)), serial),
        ("import_parallel", ("import", str(out), "--parallel", "4"), parallel),
        ("reimport_parallel", ("import", str(out), "--parallel", "4"), parallel),
    )
    for name, arguments, key in steps:
        timed[name] = cli(*arguments, url=url, key=key)
        print(f"{name}: {timed[name][0]:.1f} s {timed[name][1]}", file=sys.stderr)
    live = {name: fields for name, fields in before.items() if not expired(int(name[1][len("memory_") :]))}
    identical = []
    for key in (serial, parallel):
        with Synapse(url, mind_key=key) as check:
            identical.append(snapshot(check) == live and len(before) == count)
    figures: dict[str, Any] = {
        "store": store,
        "memories": count,
        "export_file_bytes": out.stat().st_size,
        "seed_batch_s": round(seeded, 2),
    }
    for name, (seconds, said) in timed.items():
        figures[f"{name}_s"] = round(seconds, 2)
        figures[f"{name}_per_s"] = round(count / seconds)
        if said:
            figures[f"{name}_said"] = said
    figures["identical"] = all(identical)
    return figures


if __name__ == "__main__":
    main()
