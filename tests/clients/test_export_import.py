"""`synapse export` of a mind and `synapse import` into an empty one reproduce every memory but the
expired ones, which an import skips and counts (a write may not set an expiry in the past)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from synapse_client import Synapse, transfer

from tests.clients.conftest import MindClients, new_mind, run_cli
from tests.support.runner import RunningService

COMPARED = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")
CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
PRIORITIES = ("critical", "high", "normal", "low")


def expires_as_stored(n: int) -> bool:
    """Memory n is stored with an expiry of now, so it is expired by the time it is exported."""
    return n % 4 == 1


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
    if expires_as_stored(n):
        body["expires_at"] = datetime.now(UTC).isoformat()  # expired at once: exported all the same
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


def test_export_then_import_into_an_empty_mind_reproduces_every_unexpired_memory(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given a mind of 140 varied memories, 35 of them expired: more than a page of the export (100)
    # and, unexpired, more than a batch of the import (100), with every category, priority and expiry
    seed(mind.agent, 140)
    before = snapshot(mind.agent)
    assert len(before) == 140
    live = {name: fields for name, fields in before.items() if not expires_as_stored(int(name[1][7:]))}
    assert len(live) == 105 > transfer.CHUNK
    # When it is exported to a file
    out = tmp_path / "mind.jsonl"
    exported = run_cli(
        "export", "--out", str(out), env={"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    )
    assert exported.returncode == 0, exported.stderr
    assert "exported 140 memories" in exported.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 140 and {"id", "version", "created_at", "expired", "verified"} <= set(lines[0])
    # And imported into an empty mind
    target = new_mind(runner, "Imported")
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": target.key}
    imported = run_cli("import", str(out), env=env)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == (
        "105 created, 0 replaced, 105 kept unverified, 0 failed, 35 skipped as expired"
    )
    # Then the new mind holds the same memories, field for field, but the expired ones
    assert snapshot(target.agent) == live
    # And importing again replaces rather than duplicates
    again = run_cli("--json", "import", str(out), env=env)
    assert json.loads(again.stdout) == {
        "created": 0,
        "replaced": 105,
        "unverified": 105,
        "verified": 0,
        "proposed": 0,
        "failed": 0,
        "skipped_expired": 35,
    }
    assert snapshot(target.agent) == live


def test_import_reports_what_failed_and_exits_non_zero(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    source = tmp_path / "broken.jsonl"
    good = varied_memory(2)
    source.write_text(
        json.dumps(good) + "\n\n" + json.dumps({**good, "key": "Not Snake"}) + "\n", encoding="utf-8"
    )
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    result = run_cli("import", str(source), env=env)
    assert result.returncode == 1
    assert result.stdout.strip() == "1 created, 0 replaced, 1 kept unverified, 1 failed"
    assert "failed memory_0002" not in result.stderr and "Not Snake" in result.stderr
    not_json = tmp_path / "not.jsonl"
    not_json.write_text("{oops\n", encoding="utf-8")
    refused = run_cli("import", str(not_json), env=env)
    assert refused.returncode == 1 and "line 1: not JSON" in refused.stderr


def test_an_import_skips_and_counts_expired_records_and_stores_the_rest(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given an export holding a memory that expired last year, one that expired a moment ago, one
    # expiring next year and one that never expires
    ago, ahead = datetime.now(UTC) - timedelta(days=365), datetime.now(UTC) + timedelta(days=365)
    records = [
        {**varied_memory(n), "key": key, "expires_at": when}
        for n, (key, when) in enumerate(
            [
                ("last_year", ago.isoformat()),
                ("a_moment_ago", datetime.now(UTC).isoformat()),
                ("next_year", ahead.isoformat()),
                ("never", None),
            ]
        )
    ]
    source = tmp_path / "with-expired.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # When it is imported
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    result = run_cli("--json", "import", str(source), env=env)
    # Then the import succeeds: the unexpired two are stored, the expired two skipped and counted
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert (answer["created"], answer["skipped_expired"], answer["failed"]) == (2, 2, 0)
    assert sorted(m.key for m in mind.agent.iter_memories(include_expired=True)) == ["never", "next_year"]
    assert "failed" not in result.stderr
