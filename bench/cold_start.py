"""Cold-start import cost of every BUILT handler, against `import boto3` measured in the same run.

    .venv/bin/python bench/cold_start.py [--runs 7] [--no-build] [--build-dir DIR] [--top N] [--max-ratio R]

It first runs `sam build` (template.yaml with this host's architecture in place of arm64, so the
built wheels import here) into `.aws-sam/cold-start/`, then measures what Lambda would load: each
function's built folder, the built layer's `python/`, and a folder holding only what the python3.13
Lambda runtime provides (boto3, botocore, s3transfer, jmespath, dateutil, six, urllib3: links to this
venv's copies). Each sample is a fresh interpreter (`python -S -P`: no site-packages, no script
folder) that blocks `awscrt` (the dev venv has it, Lambda does not; with it botocore's import is
slower, which would flatter the ratio) and times its one import with `time.perf_counter`; nothing is
written back (PYTHONDONTWRITEBYTECODE, as on Lambda's read-only file system), so a module shipped
without `.pyc` is compiled on every cold start, as it would be there. Rounds interleave boto3 and
every handler so drift on the machine affects them alike; the ratio is median handler / median
boto3 — compare ratios across machines, not milliseconds. Beside the wall-clock ratio (the goal,
issue 14: <= 1.3) it prints the same ratio on the child's CPU time, which a busy machine (2 shared
cores) disturbs far less.

`--top N` adds, per handler, the N costliest imports from one `python -X importtime` run of the
handler (self time summed per top-level package: synapse, pydantic, botocore, …).
`--max-ratio R` exits 1 when a handler's ratio exceeds R.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import yaml
from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
DEFAULT_BUILD_DIR = ROOT / ".aws-sam" / "cold-start"
VENV_BIN = Path(sys.executable).parent
# What the python3.13 Lambda runtime has on its path besides the standard library.
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")

ENV = {**BENCH_ENV, "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}

# The child blocks awscrt, then prints the seconds its one import took, wall-clock and its own CPU
# time (what a loaded machine disturbs least), on its last line.
_TIMED_IMPORT = (
    "import sys, time\nsys.modules['awscrt'] = None\nstart = time.perf_counter()\n"
    "cpu = time.process_time()\nimport {module}\n"
    "print(repr(time.perf_counter() - start), repr(time.process_time() - cpu))\n"
)
_PROFILED_IMPORT = "import sys\nsys.modules['awscrt'] = None\nimport {module}\n"


@dataclass(frozen=True)
class Handler:
    name: str
    code_dir: Path
    module: str
    layers: tuple[Path, ...]


def host_architecture() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)


def sam_build(build_dir: Path) -> None:
    """`sam build` of template.yaml for this host's architecture (the deployed one is arm64)."""
    host = host_architecture()
    text = TEMPLATE.read_text()
    for line in ("    Architectures: [arm64]\n", "      CompatibleArchitectures: [arm64]\n"):
        text = text.replace(line, line.replace("arm64", host))
    text = text.replace("      BuildArchitecture: arm64\n", f"      BuildArchitecture: {host}\n")
    build_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        variant = Path(scratch) / "template.yaml"
        variant.write_text(text)
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
        # layers/synapse/Makefile picks its wheels' architecture from this (default arm64).
        env["SYNAPSE_LAYER_ARCH"] = host
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
        argv = [
            str(VENV_BIN / "sam"),
            "build",
            "--build-dir",
            str(build_dir),
            "--template-file",
            str(variant),
        ]
        done = subprocess.run(
            [*argv, "--template-file", str(variant), "--base-dir", str(ROOT)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"sam build failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def built_handlers(build_dir: Path) -> list[Handler]:
    """Every function of the built template: its folder, handler module and layers' python/ folders."""
    built = yaml.safe_load((build_dir / "template.yaml").read_text())
    resources = built["Resources"]
    globals_ = built.get("Globals", {}).get("Function", {})
    found = []
    for resource in resources.values():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource["Properties"]
        module = props.get("Handler", globals_.get("Handler")).rsplit(".", 1)[0]
        # SAM prepends the global Layers to a function's own (the embedding functions add one)
        refs = [*globals_.get("Layers", []), *props.get("Layers", [])]
        layers = tuple(build_dir / resources[r["Ref"]]["Properties"]["ContentUri"] / "python" for r in refs)
        code_dir = build_dir / props["CodeUri"]
        found.append(Handler(_source_name(code_dir), code_dir, module, layers))
    return sorted(found, key=lambda h: h.name)


def _source_name(code_dir: Path) -> str:
    """StoreMemoryFunction → store_memory (the functions/ folder name), for a readable table."""
    stem = code_dir.name.removesuffix("Function")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in stem).lstrip("_")


def lambda_runtime(into: Path) -> Path:
    """A folder with links to this venv's copies of what the Lambda runtime provides, and no more."""
    for name in RUNTIME_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise SystemExit(f"{name} is not installed in this venv")
        if spec.submodule_search_locations:
            (into / name).symlink_to(next(iter(spec.submodule_search_locations)), target_is_directory=True)
        else:
            (into / Path(spec.origin).name).symlink_to(spec.origin)
    return into


def _run(code: str, path: list[Path], *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    return subprocess.run(
        [sys.executable, "-S", "-P", *flags, "-c", code],
        cwd=path[0],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


class Sample(NamedTuple):
    wall: float
    cpu: float


def import_seconds(module: str, path: list[Path]) -> Sample:
    done = _run(_TIMED_IMPORT.format(module=module), path)
    if done.returncode != 0:
        raise SystemExit(f"import {module} from {path} failed:\n{done.stderr}")
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return Sample(float(wall), float(cpu))


def top_imports(module: str, path: list[Path], count: int) -> list[tuple[str, int, int]]:
    """(top-level package, self µs summed over its modules, module count) of one -X importtime run."""
    done = _run(_PROFILED_IMPORT.format(module=module), path, "-X", "importtime")
    if done.returncode != 0:
        raise SystemExit(f"import {module} from {path} failed:\n{done.stderr}")
    own: dict[str, int] = defaultdict(int)
    modules: dict[str, int] = defaultdict(int)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        package = name.split(".")[0]
        own[package] += int(self_us)
        modules[package] += 1
    ranked = sorted(own, key=lambda p: own[p], reverse=True)[:count]
    return [(p, own[p], modules[p]) for p in ranked]


def measure(
    handlers: list[Handler], runtime: Path, runs: int
) -> tuple[list[Sample], dict[str, list[Sample]]]:
    """`runs` rounds; each round imports boto3 once and every handler once, each in its own process."""
    baseline: list[Sample] = []
    samples: dict[str, list[Sample]] = {h.name: [] for h in handlers}
    for _ in range(runs):
        baseline.append(import_seconds("boto3", [runtime]))
        for handler in handlers:
            samples[handler.name].append(
                import_seconds(handler.module, [handler.code_dir, *handler.layers, runtime])
            )
    return baseline, samples


def _median_ms(samples: list[Sample], clock: str) -> float:
    return statistics.median(getattr(s, clock) for s in samples) * 1000


def ratios(baseline: list[Sample], samples: dict[str, list[Sample]], clock: str) -> dict[str, float]:
    """Each handler's median over boto3's median, on the wall clock or on CPU time."""
    boto3 = _median_ms(baseline, clock)
    return {name: _median_ms(taken, clock) / boto3 for name, taken in samples.items()}


def table(baseline: list[Sample], samples: dict[str, list[Sample]]) -> str:
    rows = [f"{'handler':<20} {'median ms':>10} {'min ms':>8} {'ratio':>6}   {'cpu ms':>7} {'cpu ratio':>9}"]
    rows.append("-" * len(rows[0]))
    wall, cpu = ratios(baseline, samples, "wall"), ratios(baseline, samples, "cpu")
    for name, taken in [*samples.items(), ("boto3 alone", baseline)]:
        if name == "boto3 alone":
            rows.append("-" * len(rows[0]))
        rows.append(
            f"{name:<20} {_median_ms(taken, 'wall'):>10.1f} {min(s.wall for s in taken) * 1000:>8.1f} "
            f"{wall.get(name, 1.0):>5.2f}x   {_median_ms(taken, 'cpu'):>7.1f} {cpu.get(name, 1.0):>8.2f}x"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per module (default 7)")
    parser.add_argument("--build-dir", type=Path, default=DEFAULT_BUILD_DIR, help="sam build output")
    parser.add_argument("--no-build", action="store_true", help="measure --build-dir as it is")
    parser.add_argument("--only", default="", help="comma-separated handler names (default: all)")
    parser.add_argument("--top", type=int, default=0, help="print each handler's N costliest imports")
    parser.add_argument("--max-ratio", type=float, default=0.0, help="exit 1 above this ratio")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not args.no_build:
        print(f"sam build ({host_architecture()}) into {args.build_dir} ...", flush=True)
        sam_build(args.build_dir)
    handlers = built_handlers(args.build_dir)
    if args.only:
        handlers = [h for h in handlers if h.name in set(args.only.split(","))]
    with tempfile.TemporaryDirectory() as scratch:
        runtime = lambda_runtime(Path(scratch))
        baseline, samples = measure(handlers, runtime, args.runs)
        print(f"Median import time over {args.runs} fresh processes each ({sys.version.split()[0]})")
        print(table(baseline, samples))
        for handler in handlers[: len(handlers) if args.top else 0]:
            ranked = top_imports(handler.module, [handler.code_dir, *handler.layers, runtime], args.top)
            print(f"\n{handler.name}: top-level package, self ms summed over its modules, modules")
            for package, self_us, count in ranked:
                print(f"  {package:<28} {self_us / 1000:>8.1f} {count:>5}")
    if args.max_ratio and max(ratios(baseline, samples, "wall").values()) > args.max_ratio:
        raise SystemExit(f"a handler's ratio exceeds {args.max_ratio}")


if __name__ == "__main__":
    main()
