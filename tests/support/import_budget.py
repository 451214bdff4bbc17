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

# One fresh interpreter without site-packages (`-S -P`), on a path of the layer's source and what
# Lambda would have, imports what every handler's budget holds (`preload`, names only), then forks a
# child per function (as many at once as there are CPUs): the child puts the function first on its
# path, imports `app` and prints what it loaded since the interpreter's own start. A fork inherits
# the preloaded modules instead of importing boto3 and the core again (~0.4 s a handler); since
# they are in every budget, they can never be what a handler loads beyond its own. `--write` forks
# from an interpreter that preloaded nothing, so a budget is what a cold start loads, exactly.
_FORK_SERVER = """
import importlib, json, os, sys
before = set(sys.modules)
order = json.loads(sys.stdin.read())
for name in order["preload"]:
    importlib.import_module(name)
def child(folder, out):
    sys.path.insert(0, folder)
    os.chdir(folder)
    import app
    loaded = sorted(m for m, v in sys.modules.items() if m not in before and v is not None)
    os.write(out, json.dumps(loaded).encode())
running = []
found = {}
def reap():
    pid, folder, read = running.pop(0)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    found[folder] = json.loads(text) if status == 0 and text else None
for folder in order["functions"]:
    if len(running) >= os.cpu_count():
        reap()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            child(folder, write)
        except BaseException as error:
            print(f"importing {folder}/app.py failed: {error!r}", file=sys.stderr)
            code = 1
        os._exit(code)
    os.close(write)
    running.append((pid, folder, read))
while running:
    reap()
print(json.dumps(found))
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


def measured(
    function_dirs: list[Path] | None = None, preload: list[str] | None = None
) -> dict[str, list[str]]:
    """What importing each function's `app.py` loads, as budgets name it. `preload`: modules named
    in every budget, imported once before the forks (see _FORK_SERVER)."""
    chosen = function_dirs or [FUNCTIONS / name for name in handlers()]
    with lambda_path() as packages:
        path = os.pathsep.join(str(p) for p in (LAYER, packages))
        order = {"preload": preload or [], "functions": [str(folder) for folder in chosen]}
        done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
            [sys.executable, "-S", "-P", "-c", _FORK_SERVER],
            input=json.dumps(order),
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": path},
            capture_output=True,
            text=True,
            check=False,
        )
    failed = done.returncode != 0 or not done.stdout.strip()
    found = {} if failed else json.loads(done.stdout.strip().splitlines()[-1])
    if failed or None in found.values():
        raise RuntimeError(f"importing the handlers failed:\n{done.stderr}")
    return {
        Path(folder).name: sorted({name for module in modules if (name := named(module)) is not None})
        for folder, modules in found.items()
    }


def in_every_budget(budget: dict[str, list[str]]) -> list[str]:
    """The modules every handler's budget names: safe to import before the forks."""
    return sorted(set.intersection(*(set(modules) for modules in budget.values()))) if budget else []


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
