"""Handlers that take no request body import no pydantic (issue 14, cold start: `from pydantic import
BaseModel` alone costs ~0.3 x `import boto3`). Only the handlers that validate a body (and the OpenAPI
document, built from the body models) may reach it; a new handler is held to this unless it is added
to BODY_HANDLERS. Checked on the import graph of the layer (grimp: every import, module level or not)
from each handler's own `from synapse… import` lines."""

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
HEAVY = ("pydantic", "pydantic_core")
# Handlers that validate a request body with the pydantic models (memory.model, webhooks.bodies,
# memory.restore), and the OpenAPI document, which is generated from those models.
BODY_HANDLERS = frozenset(
    {
        "create_hook",
        "create_key",
        "create_mind",
        "create_webhook",
        "openapi",
        "receive_hook",
        "rename_mind",
        "restore_memory",
        "rotate_hook_secret",
        "store_memory",
        "store_memory_batch",
        "update_memory",
        "update_webhook",
    }
)


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
        for heavy in HEAVY
        if (chain := graph.find_shortest_chain(importer=start, imported=heavy))
    ]
    return min(chains, key=len) if chains else None


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_without_a_body_imports_no_pydantic(handler: Path) -> None:
    # Given a handler that validates no request body
    if handler.parent.name in BODY_HANDLERS:
        pytest.skip("validates a request body with pydantic")
    # When its imports are followed through the layer
    chain = _chain_to_pydantic(handler)
    # Then none of them reaches pydantic
    assert chain is None, f"{handler.parent.name} imports pydantic: {' → '.join(chain or [])}"


def test_the_body_handlers_are_real_handlers() -> None:
    # Given the handler folders, then every exemption names one of them (no stale entry)
    assert {path.parent.name for path in HANDLERS} >= BODY_HANDLERS


def test_the_check_sees_pydantic_where_it_is() -> None:
    # Given a handler known to validate a body, then the check finds its way to pydantic
    assert _chain_to_pydantic(ROOT / "functions" / "store_memory" / "app.py") is not None
