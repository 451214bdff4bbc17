"""No handler imports pydantic (issue 14, cold start: `from pydantic import BaseModel` alone costs
~0.3 x `import boto3`). Request bodies are validated by `synapse.core.validation`; pydantic describes
the answers in the OpenAPI generator (`synapse.openapi`), which runs at build time, not in Lambda.
Checked on the import graph of the layer (grimp: every import, module level or not) from each
handler's own `from synapse… import` lines."""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER_ROOT = ROOT / "layers" / "synapse"
HANDLERS = sorted((ROOT / "functions").glob("*/app.py"))
HEAVY = "pydantic"


@cache
def _graph() -> grimp.ImportGraph:
    if str(LAYER_ROOT) not in sys.path:
        sys.path.insert(0, str(LAYER_ROOT))
    return grimp.build_graph("synapse", include_external_packages=True)


def _imported_layer_modules(handler: Path, graph: grimp.ImportGraph) -> set[str]:
    """The layer modules a handler's `from synapse.x import y` lines load (y a module, or x's name)."""
    found = set()
    for node in ast.walk(ast.parse(handler.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("synapse"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in graph.modules else str(node.module))
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("synapse")}
    return found


def _chain_to_pydantic(handler: Path) -> tuple[str, ...] | None:
    graph = _graph()
    chains = [
        chain
        for start in _imported_layer_modules(handler, graph)
        if (chain := graph.find_shortest_chain(importer=start, imported=HEAVY))
    ]
    return min(chains, key=len) if chains else None


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_imports_no_pydantic(handler: Path) -> None:
    # Given a handler, when its imports are followed through the layer
    chain = _chain_to_pydantic(handler)
    # Then none of them reaches pydantic
    assert chain is None, f"{handler.parent.name} imports pydantic: {' → '.join(chain or [])}"


def test_the_check_sees_pydantic_where_it_is() -> None:
    # Given the OpenAPI generator, which describes the answers with pydantic models, then the graph
    # the check follows finds its way there
    assert _graph().find_shortest_chain(importer="synapse.openapi.document", imported=HEAVY) is not None
