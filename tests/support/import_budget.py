"""What each handler imports at cold start, against a committed budget (tests/unit/import_budget.json).

A cold start's cost is what its imports load; bench/cold_start.py measures the time, this keeps the
import graph that time depends on. Each handler is imported in a fresh interpreter, as Lambda's init
does, and what it loaded is named: every module of the layer (`synapse.…`), every third-party
package by its top-level name, and the few standard-library packages that cost real time. A module
outside the handler's budget fails tests/unit/test_import_budget.py: a new import on a cold path is a
decision (regenerate the budget and commit it), not an accident.

    .venv/bin/python -m tests.support.import_budget --write   # after a deliberate change
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "synapse"
FUNCTIONS = ROOT / "functions"
BUDGET = ROOT / "tests" / "unit" / "import_budget.json"
LAYER_REQUIREMENTS = (LAYER / "requirements.txt",)
# What the python3.13 Lambda runtime has on its path besides the standard library (bench/cold_start.py).
RUNTIME_DISTRIBUTIONS = ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3")
# Standard-library packages whose import costs a cold start real time; the rest are too cheap to name.
STDLIB_WATCHED = frozenset(
    {"sqlite3", "asyncio", "concurrent", "email", "http", "xml", "decimal", "ssl", "multiprocessing"}
)

# Runs in a fresh interpreter without site-packages (`-S -P`), on a path of the function, the layer's
# source and what Lambda would have: what the interpreter's own start loaded is left out.
_IMPORT_HANDLER = """
import json, sys
before = set(sys.modules)
import app
print(json.dumps(sorted(m for m, v in sys.modules.items() if m not in before and v is not None)))
"""


def handlers() -> list[str]:
    return sorted(path.parent.name for path in FUNCTIONS.glob("*/app.py"))


def named(module: str) -> str | None:
    """How a loaded module counts against a budget, or None when it does not count."""
    top = module.split(".")[0]
    if top == "synapse":
        return module
    if top == "app" or top.startswith("_"):
        return None
    if top in sys.stdlib_module_names:
        return top if top in STDLIB_WATCHED else None
    return top


def _distributions() -> list[str]:
    """The runtime's packages and every layer requirement (pinned `name==version` lines)."""
    pinned = []
    for requirements in LAYER_REQUIREMENTS:
        for line in requirements.read_text(encoding="utf-8").splitlines():
            if found := re.match(r"^([A-Za-z0-9_.-]+)==", line.strip()):
                pinned.append(found[1])
    return [*RUNTIME_DISTRIBUTIONS, *pinned]


@contextmanager
def lambda_path() -> Iterator[Path]:
    """A folder of links to this venv's copies of what a function's Lambda path holds and nothing
    else (no test or dev package can slip into a cold start through the venv)."""
    tops: dict[str, set[str]] = {}
    for top, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            tops.setdefault(re.sub(r"[-_.]+", "-", dist).lower(), set()).add(top)
    with tempfile.TemporaryDirectory(prefix="lambda-path-") as folder:
        into = Path(folder)
        for dist in _distributions():
            for top in tops.get(re.sub(r"[-_.]+", "-", dist).lower(), set()):
                spec = importlib.util.find_spec(top)
                if spec is None or top.startswith("__") or top.endswith("-stubs"):
                    continue
                if spec.submodule_search_locations:
                    source = Path(next(iter(spec.submodule_search_locations)))
                    (into / top).symlink_to(source, target_is_directory=True)
                elif spec.origin:
                    (into / Path(spec.origin).name).symlink_to(spec.origin)
        yield into


def loaded(function_dir: Path, packages: Path) -> list[str]:
    """What importing `function_dir/app.py` loads, as budgets name it."""
    path = os.pathsep.join(str(p) for p in (function_dir, LAYER, packages))
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-S", "-P", "-c", _IMPORT_HANDLER],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": path},
        cwd=function_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {function_dir.name}/app.py failed:\n{done.stderr}")
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    return sorted({name for module in modules if (name := named(module)) is not None})


def measured(function_dirs: list[Path] | None = None) -> dict[str, list[str]]:
    chosen = function_dirs or [FUNCTIONS / name for name in handlers()]
    with lambda_path() as packages, ThreadPoolExecutor(max_workers=4) as pool:
        found = pool.map(lambda folder: loaded(folder, packages), chosen)
        return {folder.name: modules for folder, modules in zip(chosen, found, strict=True)}


def over_budget(found: dict[str, list[str]], budget: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per handler, what it loads beyond its budget (a handler without a budget has none)."""
    extra = {name: sorted(set(modules) - set(budget.get(name, []))) for name, modules in found.items()}
    return {name: modules for name, modules in extra.items() if modules}


def read_budget() -> dict[str, list[str]]:
    budget: dict[str, list[str]] = json.loads(BUDGET.read_text(encoding="utf-8"))
    return budget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write what each handler loads as its budget")
    args = parser.parse_args()
    found = measured()
    if args.write:
        BUDGET.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {BUDGET.relative_to(ROOT)}: {len(found)} handlers")
        return
    for name, modules in found.items():
        layer = sum(m.startswith("synapse") for m in modules)
        print(f"{name:<24} {layer:>3} layer modules  {', '.join(m for m in modules if '.' not in m)}")


if __name__ == "__main__":
    main()
