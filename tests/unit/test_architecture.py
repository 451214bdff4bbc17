"""The shape of the code, kept by tests: small modules and functions in the layer, no import that
hides a cycle, every Lambda entry point wearing one decorator. (Import direction between the
layer's packages is import-linter's job: `make lint-imports`, contracts in pyproject.toml.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "synapse" / "synapse"
MODULE_MAX_LINES = 400
FUNCTION_MAX_LINES = 60
ENTRY_DECORATORS = {"endpoint", "public_endpoint", "transport_endpoint", "entry_point"}
HANDLERS = sorted((ROOT / "functions").glob("*/app.py"))
# The modules that import layer modules inside their functions, on purpose, for a cold start's sake:
# each MCP tool loads its own on first call, so /mcp's cold start does without them (issue 22,
# tests/unit/test_mcp_imports.py); observability builds the powertools Logger/Metrics on first use, the
# stream reader loads proposals, accepting a proposal loads the body rules (issue 35,
# tests/unit/test_import_budget.py). Not a cycle's hiding place: import-linter checks those imports'
# direction like any other. And the write handlers' `similar` (issue 33): the search index's
# modules load on the first write that asks, so the store functions' cold start does without them.
# And recall's `relevant` (issue 35): the search modules and sqlite3 load with the first recall that
# has a `q`, so a recall without one does without them; a member change loads `holdings` only when it
# ends an owner's tenure, so creating a mind, listing members and invitations do without it.
# And time (issue 42): the time grammar (`synapse.when`) loads where time is read — the first search,
# the first indexed memory, the first `now=`/`tz=` — and recall's "Coming up" loads the index reader
# with the first recall, so the authorizer and the handlers that read no time do without them. The
# grammar loads with the first question that may name a time (`when.words`, a cheap check; search's
# cold start holds only `when.window`), and the embedding model's code (`embedding.minilm`, its
# tokenizer's patterns) with the model itself, on the first embed: search's cold start does without
# both, the indexer's without the model's code (issue 43).
DEFERRED_FOR_COLD_START = {
    "synapse/mcp/calls.py",
    "synapse/core/observability.py",
    "synapse/embedding/__init__.py",
    "synapse/memory/events.py",
    "synapse/memory/proposals.py",
    "synapse/recall/relevant.py",
    "synapse/recall/coming_up.py",
    "synapse/api/queries.py",
    "synapse/search/in_time.py",
    "synapse/index/schema.py",
    "synapse/search/on_write.py",
    "synapse/teams/members.py",
}
# Modules whose NamedTuples still have string annotations (`from __future__ import annotations`):
# search fusion and vectors, being reworked on another branch; they follow it when it lands.
NAMED_TUPLES_WITH_STRING_ANNOTATIONS = {"synapse/search/fusion.py", "synapse/index/vectors.py"}


def _layer_modules() -> list[Path]:
    return sorted(LAYER.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _name(path: Path) -> str:
    return str(path.relative_to(LAYER.parent))


def test_the_layer_is_one_package_per_concern() -> None:
    # Given the layer package
    # When its top level is listed
    top = {p.name for p in LAYER.iterdir() if not p.name.startswith("__")}
    # Then it holds only subpackages, each a concern a newcomer can find by its folder
    assert top == {
        "api",
        "auth",
        "core",
        "embedding",
        "index",
        "lifecycle",
        "mcp",
        "memory",
        "minds",
        "oauth",
        "openapi",
        "portability",
        "recall",
        "search",
        "storage",
        "teams",
        "webhooks",
        "when",
    }
    assert all((LAYER / name / "__init__.py").is_file() for name in top)


@pytest.mark.parametrize("path", _layer_modules(), ids=_name)
def test_no_layer_module_is_over_the_line_budget(path: Path) -> None:
    # Given a module of the layer
    # When its lines are counted
    lines = len(path.read_text().splitlines())
    # Then it stays small enough to read in one sitting
    assert lines <= MODULE_MAX_LINES, f"{_name(path)} has {lines} lines; split it by what it holds"


@pytest.mark.parametrize("path", _layer_modules(), ids=_name)
def test_no_layer_function_is_over_the_line_budget(path: Path) -> None:
    # Given the functions of a layer module
    functions = [
        node for node in ast.walk(_tree(path)) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    # When their lengths are measured
    long = {f.name: f.end_lineno - f.lineno + 1 for f in functions if f.end_lineno}
    # Then none is longer than the budget
    assert {name: n for name, n in long.items() if n > FUNCTION_MAX_LINES} == {}


@pytest.mark.parametrize("path", _layer_modules(), ids=_name)
def test_every_layer_import_is_at_module_level(path: Path) -> None:
    # Given a layer module
    tree = _tree(path)
    top_level = {id(node) for node in tree.body}
    # When its imports of synapse are collected, with where they stand
    deferred = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("synapse")
        and id(node) not in top_level
    ]
    guarded = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.If)
        and "TYPE_CHECKING" in ast.unparse(node.test)
        and "synapse" in ast.unparse(node)
    ]
    # Then none is deferred into a function (outside the cold-start exception) or hidden behind
    # TYPE_CHECKING (both dodge a cycle). A third-party module may stand behind TYPE_CHECKING for its
    # types alone: synapse.embedding names numpy's array type without loading numpy at import.
    assert (deferred == [] or _name(path) in DEFERRED_FOR_COLD_START) and guarded == []


@pytest.mark.parametrize("path", _layer_modules(), ids=_name)
def test_a_module_with_named_tuples_evaluates_its_annotations(path: Path) -> None:
    # Given a layer module
    tree = _tree(path)
    # When it defines a NamedTuple
    named_tuples = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any("NamedTuple" in ast.unparse(b) for b in node.bases)
    ]
    future = any(isinstance(node, ast.ImportFrom) and node.module == "__future__" for node in tree.body)
    # Then it does without `from __future__ import annotations`: under it every field's type is a
    # string, which NamedTuple compiles into a ForwardRef at import, ~20 µs a field on a cold start
    # (a forward reference is quoted instead). fusion and vectors follow once their rework lands.
    assert not (named_tuples and future) or _name(path) in NAMED_TUPLES_WITH_STRING_ANNOTATIONS


@pytest.mark.parametrize(
    "handler", sorted((ROOT / "functions").glob("*/app.py")), ids=lambda p: p.parent.name
)
def test_every_lambda_entry_point_wears_one_decorator(handler: Path) -> None:
    # Given a function's app.py
    tree = _tree(handler)
    # When its `handler` is found
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "handler"]
    # Then it is decorated by exactly one of the shared entry decorators (logging, tracing, metrics
    # and, for HTTP, error mapping come from there, never per function)
    assert len(found) == 1, "every app.py defines one handler"
    names = [ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in found[0].decorator_list]
    assert len(names) == 1 and names[0] in ENTRY_DECORATORS, names


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_every_handler_imports_boto3_before_the_layer(handler: Path) -> None:
    # Given a function's app.py
    imports = [node for node in _tree(handler).body if isinstance(node, ast.Import | ast.ImportFrom)]
    # When the modules it imports are listed in their order
    modules = [n.names[0].name if isinstance(n, ast.Import) else n.module or "" for n in imports]
    first_layer = next(i for i, name in enumerate(modules) if name.split(".")[0] == "synapse")
    # Then boto3 comes first, before any layer module: botocore's import runs at the stack depth a
    # handler importing boto3 alone gives it, not under the layer's chain, where CPython 3.13 may
    # free and map a frame-stack chunk again and again (docs/benchmarks.md#cold-start)
    assert "boto3" in modules[:first_layer], f"{handler.parent.name}/app.py: `import boto3` first"


@pytest.mark.parametrize(
    "handler", sorted((ROOT / "functions").glob("*/app.py")), ids=lambda p: p.parent.name
)
def test_handlers_are_doorways(handler: Path) -> None:
    # Given a function's app.py
    lines = [line for line in handler.read_text().splitlines() if line.strip()]
    # When its non-blank lines are counted
    # Then it is a few lines that parse, call the layer and respond
    assert len(lines) <= 30, f"{handler.parent.name}/app.py has {len(lines)} lines; move logic into the layer"


def test_every_file_the_suite_runs_first_exists() -> None:
    # A renamed or removed costly file would silently drop out of the front of the run
    from tests.conftest import RUN_FIRST

    root = Path(__file__).resolve().parents[2]
    assert [path for path in RUN_FIRST if not (root / path).is_file()] == []
