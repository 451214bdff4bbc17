"""Every handler's cold start imports what its budget allows and no more (issue 35): each handler
is imported on the path Lambda gives it (the function, the layer, the runtime's and the layer's
packages), in a fork of one fresh interpreter that imported only what every budget holds
(tests/support/import_budget.py), and what it loaded is held to tests/unit/import_budget.json.
A new import on a cold path fails here; if it is meant, regenerate the budget and commit it:

    .venv/bin/python -m tests.support.import_budget --write
"""

from __future__ import annotations

from pathlib import Path

from tests.support import import_budget

REGENERATE = ".venv/bin/python -m tests.support.import_budget --write"


def test_every_handler_imports_only_what_its_budget_allows() -> None:
    # Given every handler's committed budget
    budget = import_budget.read_budget()
    # When each handler is imported as a cold start imports it
    found = import_budget.measured(preload=import_budget.in_every_budget(budget))
    # Then each has a budget, and none loads a module outside it
    assert sorted(found) == sorted(budget), f"handlers added or removed: run {REGENERATE}"
    over = import_budget.over_budget(found, budget)
    assert over == {}, f"imported at cold start beyond the budget (lazy-load it, or run {REGENERATE}): {over}"


def test_the_budget_check_fails_on_a_module_outside_the_budget(tmp_path: Path) -> None:
    # Given a handler whose budget was taken before it grew an sqlite3 import and an index module
    handler = tmp_path / "grown"
    handler.mkdir()
    (handler / "app.py").write_text("from synapse.core import clock\n", encoding="utf-8")
    budget = import_budget.measured([handler])
    (handler / "app.py").write_text(
        "from synapse.core import clock\nimport sqlite3\nfrom synapse.index import folding\n",
        encoding="utf-8",
    )
    # When it is measured again
    found = import_budget.measured([handler])
    # Then the check names exactly what came in beyond the budget
    assert import_budget.over_budget(found, budget) == {
        "grown": ["sqlite3", "synapse.index", "synapse.index.folding"]
    }
    # And a handler within its budget passes
    assert import_budget.over_budget(budget, budget) == {}
