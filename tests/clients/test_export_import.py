"""`synapse export` of a mind and `synapse import` into an empty one reproduce every memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from synapse_client import Synapse

from tests.clients.conftest import MindClients, new_mind, run_cli
from tests.support.runner import RunningService

COMPARED = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")
CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
PRIORITIES = ("critical", "high", "normal", "low")


def varied_memory(n: int) -> dict[str, Any]:
    """Memory n of a small mind: every category and priority, tags or none, some expired or expiring."""
    body: dict[str, Any] = {
        "category": CATEGORIES[n % len(CATEGORIES)],
        "key": f"memory_{n:04d}",
        "content": f"Memory {n}: Schäfer's note № {n} — {'long ' * (n % 7)}text",
        "priority": PRIORITIES[n % len(PRIORITIES)],
        "confidence": round((n % 10) / 10, 1),
    }
    if n % 3:
        body["tags"] = [f"tag_{n % 5}", "shared"]
    if n % 4 == 1:
        body["expires_at"] = "2020-01-01T00:00:00Z"  # already expired: exported all the same
    elif n % 4 == 2:
        body["expires_at"] = f"2031-{n % 12 + 1:02d}-01T12:00:00Z"
    return body


def snapshot(client: Synapse) -> dict[tuple[str, str], dict[str, Any]]:
    memories = client.iter_memories(include_expired=True, limit=100)
    return {(m.category, m.key): {f: getattr(m, f) for f in COMPARED} for m in memories}


def seed(client: Synapse, count: int) -> None:
    bodies = [varied_memory(n) for n in range(count)]
    for start in range(0, count, 100):
        answer = client.remember_batch(bodies[start : start + 100])
        assert answer.summary.failed == 0, answer.results


def test_export_then_import_into_an_empty_mind_reproduces_every_memory(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given a mind of 200 varied memories
    seed(mind.agent, 200)
    before = snapshot(mind.agent)
    assert len(before) == 200
    # When it is exported to a file
    out = tmp_path / "mind.jsonl"
    exported = run_cli(
        "export", "--out", str(out), env={"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    )
    assert exported.returncode == 0, exported.stderr
    assert "exported 200 memories" in exported.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 200 and {"id", "version", "created_at", "expired", "verified"} <= set(lines[0])
    # And imported into an empty mind
    target = new_mind(runner, "Imported")
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": target.key}
    imported = run_cli("import", str(out), env=env)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "200 created, 0 replaced, 200 kept unverified, 0 failed"
    # Then the new mind holds the same memories, field for field
    assert snapshot(target.agent) == before
    # And importing again replaces rather than duplicates
    again = run_cli("--json", "import", str(out), env=env)
    assert json.loads(again.stdout) == {
        "created": 0,
        "replaced": 200,
        "unverified": 200,
        "verified": 0,
        "proposed": 0,
        "failed": 0,
    }
    assert snapshot(target.agent) == before


def test_import_reports_what_failed_and_exits_non_zero(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    source = tmp_path / "broken.jsonl"
    good = varied_memory(1)
    source.write_text(
        json.dumps(good) + "\n\n" + json.dumps({**good, "key": "Not Snake"}) + "\n", encoding="utf-8"
    )
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    result = run_cli("import", str(source), env=env)
    assert result.returncode == 1
    assert result.stdout.strip() == "1 created, 0 replaced, 1 kept unverified, 1 failed"
    assert "failed memory_0001" not in result.stderr and "Not Snake" in result.stderr
    not_json = tmp_path / "not.jsonl"
    not_json.write_text("{oops\n", encoding="utf-8")
    refused = run_cli("import", str(not_json), env=env)
    assert refused.returncode == 1 and "line 1: not JSON" in refused.stderr
