"""Cold-start import cost of every handler, against `import boto3` measured in the same run.

Each sample is a fresh interpreter (`python -c`) that times its one import with `time.perf_counter`,
so nothing is cached in-process; the environment is the tests' (fake AWS credentials, tracing off)
and the path holds only the layer source and the function's folder, as in Lambda. Rounds interleave
boto3 and every handler so drift on the machine affects them alike. The ratio handler/boto3 is what
to compare across machines; absolute milliseconds are not.

    .venv/bin/python bench/cold_start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "layers" / "synapse"
FUNCTIONS = ROOT / "functions"

ENV = {**BENCH_ENV, "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}

# The child prints the seconds its one import took, on its last line.
_TIMED_IMPORT = (
    "import time\nstart = time.perf_counter()\nimport {module}\nprint(repr(time.perf_counter() - start))\n"
)


def import_seconds(module: str, path: list[Path]) -> float:
    env = {**ENV, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    done = subprocess.run(
        [sys.executable, "-c", _TIMED_IMPORT.format(module=module)],
        cwd=path[0] if path else ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"import {module} from {path} failed:\n{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def handlers() -> list[Path]:
    return sorted(p.parent for p in FUNCTIONS.glob("*/app.py"))


def measure(runs: int) -> tuple[list[float], dict[str, list[float]]]:
    """`runs` rounds; each round imports boto3 once and every handler once, each in its own process."""
    found = handlers()
    baseline: list[float] = []
    samples: dict[str, list[float]] = {d.name: [] for d in found}
    for _ in range(runs):
        baseline.append(import_seconds("boto3", []))
        for function_dir in found:
            samples[function_dir.name].append(import_seconds("app", [function_dir, LAYER]))
    return baseline, samples


def table(baseline: list[float], samples: dict[str, list[float]]) -> str:
    boto3_ms = statistics.median(baseline) * 1000
    rows = [f"{'handler':<20} {'median ms':>10} {'min ms':>8} {'boto3 ms':>9} {'ratio':>6}"]
    rows.append("-" * len(rows[0]))
    for name, seconds in samples.items():
        median_ms = statistics.median(seconds) * 1000
        rows.append(
            f"{name:<20} {median_ms:>10.1f} {min(seconds) * 1000:>8.1f} {boto3_ms:>9.1f} "
            f"{median_ms / boto3_ms:>5.2f}x"
        )
    rows.append("-" * len(rows[0]))
    rows.append(
        f"{'boto3 alone':<20} {boto3_ms:>10.1f} {min(baseline) * 1000:>8.1f} {boto3_ms:>9.1f} {1:>5.2f}x"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per module (default 7)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    baseline, samples = measure(args.runs)
    print(f"Median import time over {args.runs} fresh processes each ({sys.version.split()[0]})")
    print(table(baseline, samples))


if __name__ == "__main__":
    main()
