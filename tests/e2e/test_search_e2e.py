"""Search on `make run`: the runner's stream pump feeds the indexer, so what is stored is found moments
later and what is deleted is gone at once (hits are hydrated from the table)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from tests.e2e.conftest import Http
from tests.support.api import MindHandle
from tests.support.runner import ROOT, RunningService


def eventually[T](probe: Callable[[], T], done: Callable[[T], bool], patience: float = 15.0) -> T:
    """Poll until `done`; the patience is generous on purpose (SPEC's 2 s p95 is measured, not asserted)."""
    deadline = time.monotonic() + patience
    while True:
        value = probe()
        if done(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def found(http: Http, mind: MindHandle, q: str) -> list[dict[str, Any]]:
    answer = http.call("GET", "/memory/search", token=mind.key, params={"q": q})
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


def test_stored_then_searchable_deleted_then_gone(
    http: Http, mind: MindHandle, runner: RunningService
) -> None:
    # Given a memory stored through the API
    body = {"category": "identity", "key": "user_name", "content": "Michael Schäfer", "tags": ["person"]}
    stored = http.call("POST", "/memory", token=mind.key, json_body=body)
    assert stored.status_code == 201, stored.text
    memory_id = stored.json()["id"]
    # When the stream pump has fed it to the indexer, search finds it (folded: schafer → Schäfer)
    results = eventually(lambda: found(http, mind, "schafer"), lambda r: len(r) == 1)
    assert [r["memory"]["id"] for r in results] == [memory_id]
    assert results[0]["snippet"] == "Michael **Schäfer**"
    # And the snapshot lives in the runner's data folder in place of EFS
    assert (runner.data_dir / "index" / mind.id / "CURRENT").is_file()
    # When it is deleted, search no longer returns it, before and after the index catches up
    assert http.call("DELETE", f"/memory/{memory_id}", token=mind.key).status_code == 204
    assert found(http, mind, "schafer") == []
    time.sleep(1.0)
    assert found(http, mind, "schafer") == []


def test_hostile_queries_over_http_are_answered_without_a_500(http: Http, mind: MindHandle) -> None:
    for q in ['"unbalanced', "NEAR(", "content:x", "*", "a OR", "\x00", "🙂", "x" * 5000, "((((a"]:
        answer = http.call("GET", "/memory/search", token=mind.key, params={"q": q})
        assert answer.status_code in {200, 400}, (q, answer.text)
        assert "fts5" not in answer.text.lower() and "traceback" not in answer.text.lower()


def test_readme_local_rebuild_works_against_the_running_runner(
    http: Http, mind: MindHandle, runner: RunningService
) -> None:
    # Given a memory stored on `make run`, which prints the DynamoDB endpoint it uses
    body = {"category": "fact", "key": "rebuilt_fact", "content": "Rebuilt from the table"}
    assert http.call("POST", "/memory", token=mind.key, json_body=body).status_code == 201
    printed = re.search(
        r"^DynamoDB: (?:DynamoDB Local|embedded moto) at (http://\S+),", runner.output(), re.MULTILINE
    )
    assert printed, runner.output()
    # When a developer (no AWS credentials of their own) runs README's rebuild command with it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNAPSE_", "AWS_"))}
    env.update({"SYNAPSE_DYNAMODB_ENDPOINT": printed.group(1), "SYNAPSE_DATA_DIR": str(runner.data_dir)})
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed module, a mind id we created
        [sys.executable, "-m", "infra.rebuild", mind.id], cwd=ROOT, env=env, capture_output=True, text=True
    )
    # Then the mind's index is rebuilt into the runner's data folder, and search still finds the memory
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 memories indexed" in done.stdout
    results = eventually(lambda: found(http, mind, "rebuilt"), lambda r: len(r) == 1)
    assert [r["memory"]["key"] for r in results] == ["rebuilt_fact"]


def _walk(http: Http, mind: MindHandle, q: str, mode: str, limit: int) -> list[str]:
    """Every page of a search, followed by its `next_cursor`: the ids in the order shown."""
    ids: list[str] = []
    cursor: str | None = None
    for _ in range(200):
        params = {"q": q, "mode": mode, "limit": str(limit), **({"cursor": cursor} if cursor else {})}
        answer = http.call("GET", "/memory/search", token=mind.key, params=params)
        assert answer.status_code == 200, answer.text
        page = answer.json()
        ids += [r["memory"]["id"] for r in page["results"]]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids
    raise AssertionError("the pages never ended")


def test_the_pages_of_a_500_memory_search_add_up_in_every_mode(http: Http, mind: MindHandle) -> None:
    # Given 500 memories, each tagged with its session, on a few topics
    topics = ["coffee and breakfast", "the garden", "his car", "work at the bank", "the dog's walks"]
    stored: list[str] = []
    for start in range(0, 500, 100):
        batch = [
            {"category": "note", "key": f"session_{n}", "tags": [f"session-{n}"],
             "content": f"Session {n}: talked about {topics[n % 5]}"}
            for n in range(start, start + 100)
        ]  # fmt: skip
        answer = http.call("POST", "/memory/batch", token=mind.key, json_body={"memories": batch})
        assert answer.status_code == 200, answer.text
        stored += [r["memory"]["id"] for r in answer.json()["results"]]
    eventually(lambda: len(_walk(http, mind, "session", "lexical", 100)), lambda n: n == 500, patience=180)
    # When `q=session` is walked page by page in each mode at limit 10, 50 and 100
    for mode in ("lexical", "hybrid", "semantic"):
        walks = {limit: _walk(http, mind, "session", mode, limit) for limit in (10, 50, 100)}
        for limit, ids in walks.items():
            # Then each memory comes once, and by words every one of the 500 comes
            assert len(ids) == len(set(ids)), (mode, limit)
            if mode != "semantic":
                assert sorted(ids) == sorted(stored), (mode, limit)
            # And in the same order whatever the page size
            assert ids == walks[100], (mode, limit)
    # And a forged cursor is refused
    forged = http.call(
        "GET", "/memory/search", token=mind.key, params={"q": "session", "cursor": "bm90IGEgY3Vyc29y"}
    )
    assert forged.status_code == 400
