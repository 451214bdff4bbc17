"""/mcp's cold start loads the transport and the tool table, not what the tools run (issue 22): each
tool in synapse.mcp.calls imports its memory, recall, search or webhooks modules when it is called.
bench/cold_start.py measures the time; this keeps the import graph that time depends on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What only a tool call needs: search's SQLite index and ranking, recall's text, the memory writes
# and reads, the batch writer, REST's query parsing. Any of them at import time is a cold-start cost.
DEFERRED = (
    "sqlite3",
    "synapse.search",
    "synapse.recall",
    "synapse.webhooks",
    "synapse.api.queries",
    "synapse.memory.store",
    "synapse.memory.model",
    "synapse.memory.reads",
    "synapse.memory.writes",
    "synapse.memory.history",
)
# What the handler does load: the transport, the JSON-RPC methods, the tools (not what they run).
EAGER = ("synapse.mcp.protocol", "synapse.mcp.rpc", "synapse.mcp.calls", "synapse.mcp.schema")

# Runs in a fresh interpreter, as Lambda's init would: the handler module imported, nothing called.
_IMPORT_HANDLER = """
import json, sys
sys.path[:0] = [{layer!r}, {function!r}]
import app
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_by_importing(function: str) -> list[str]:
    code = _IMPORT_HANDLER.format(layer=str(ROOT / "layers" / "synapse"), function=str(ROOT / function))
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_importing_the_mcp_handler_loads_none_of_what_the_tools_run() -> None:
    # Given /mcp's handler, imported in a fresh interpreter as a cold start does
    loaded = _loaded_by_importing("functions/mcp")
    # When its loaded modules are searched for what only a tool call needs
    eager = sorted(m for m in loaded if any(_under(m, package) for package in DEFERRED))
    # Then none is there, and the handler's own modules are
    assert eager == []
    assert set(EAGER) <= set(loaded)


def test_the_deferred_packages_are_real_so_the_check_above_can_fail() -> None:
    # Given a REST handler that stores a memory and one that searches
    # When each is imported in a fresh interpreter
    stored = set(_loaded_by_importing("functions/store_memory"))
    searched = set(_loaded_by_importing("functions/search"))
    # Then the names the /mcp check looks for are ones those imports do load
    assert {"synapse.memory.store", "synapse.memory.model"} <= stored
    assert {"sqlite3", "synapse.search.service"} <= searched
