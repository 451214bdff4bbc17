"""`synapse import` keeps trust honest (issue 24 item 3): an import never makes an agent's memory a
verified one. With a person's JWT their own verified memories stay theirs and verified, the rest
arrive as an agent's through a short-lived Mind Key that is revoked afterwards (also on failure);
`--verify` makes the person vouch; a Mind Key import says what it could not keep."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from synapse_client import Synapse, transfer

from tests.clients.conftest import MindClients, run_cli
from tests.support.runner import RunningService

FIXTURES = Path(__file__).parent / "fixtures" / "import"


def exported(key: str, source: str, verified: bool) -> dict[str, Any]:
    """An export line as `synapse export` writes it (the fields a write ignores included)."""
    return {
        "id": f"mem_{key}",
        "mind_id": "m_elsewhere",
        "category": "fact",
        "key": key,
        "content": f"{key} as {source}",
        "tags": ["moved"],
        "priority": "normal",
        "source": source,
        "verified": verified,
        "confidence": 1.0 if source == "user" else 0.7,
        "version": 3,
        "created_at": "2024-01-01T00:00:00Z",
        "updated_at": "2024-01-02T00:00:00Z",
    }


MIXED = [
    exported("told_by_person", "user", True),
    exported("also_told", "user", True),
    exported("guessed_by_agent", "agent", False),
    exported("agent_again", "agent", False),
]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def person_env(runner: RunningService, mind: MindClients) -> dict[str, str]:
    return {"SYNAPSE_URL": runner.url, "SYNAPSE_TOKEN": runner.jwt, "SYNAPSE_MIND_ID": mind.id}


def stored(client: Synapse) -> dict[str, tuple[str, bool]]:
    return {m.key: (m.source, m.verified) for m in client.iter_memories(include_expired=True, limit=100)}


def subject(jwt: str) -> str:
    """The person a JWT names (its `sub`), read without checking the signature."""
    payload = jwt.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


def key_ids(mind: MindClients) -> list[str]:
    return [key.id for key in mind.person.iter_keys(mind.id)]


def test_a_persons_import_keeps_agent_memories_unverified_and_revokes_its_key(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given an export mixing a person's verified memories and an agent's unverified ones
    source = write(tmp_path / "mixed.jsonl", MIXED)
    keys_before = key_ids(mind)
    # When the person imports it with their JWT
    result = run_cli("import", str(source), env=person_env(runner, mind))
    # Then the person's stay theirs and verified, the agent's arrive as an agent's, unverified
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4 created, 0 replaced, 2 kept unverified, 0 failed"
    assert stored(mind.person) == {
        "told_by_person": ("user", True),
        "also_told": ("user", True),
        "guessed_by_agent": ("agent", False),
        "agent_again": ("agent", False),
    }
    # And the key that wrote them is gone, named in the audit as made and revoked for the import
    assert key_ids(mind) == keys_before
    assert "now revoked" in result.stderr
    events = [(e.action, e.target.get("label", "")) for e in mind.person.iter_audit(mind.id)]
    assert sorted(a for a, label in events if label.startswith("import ")) == ["key.created", "key.revoked"]
    # And the agent memory's revision says an agent wrote it
    memory = mind.person.find("fact", "guessed_by_agent")
    assert memory is not None
    revisions = list(mind.person.iter_history(memory.id))
    assert revisions[-1].changed_by["source"] == "agent"


def test_the_temporary_key_is_revoked_when_the_import_fails_half_way(mind: MindClients) -> None:
    # Given records that break after the first batch of 100 agent-sourced memories was stored
    def records() -> Iterator[dict[str, Any]]:
        for n in range(150):
            yield exported(f"agent_{n:03d}", "agent", False)
        raise ValueError("line 151: not JSON")

    keys_before = key_ids(mind)
    # When a person imports them
    with pytest.raises(ValueError, match="line 151"):
        transfer.import_records(mind.person, records())
    # Then what was stored arrived as an agent's, and the import's key is revoked all the same
    assert set(stored(mind.person).values()) == {("agent", False)}
    assert len(stored(mind.person)) == 100
    assert key_ids(mind) == keys_before


def test_verify_makes_the_person_vouch_for_the_agent_ones(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given the mixed export
    source = write(tmp_path / "mixed.jsonl", MIXED)
    # When the person imports it with --verify
    result = run_cli("import", "--verify", str(source), env=person_env(runner, mind))
    # Then every memory is verified, the agent's still an agent's, verified by the person
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4 created, 0 replaced, 0 kept unverified, 2 verified by you, 0 failed"
    agent = mind.person.find("fact", "guessed_by_agent")
    person = mind.person.find("fact", "told_by_person")
    assert agent is not None and person is not None
    assert (agent.source, agent.verified) == ("agent", True)
    assert agent.verified_by == subject(runner.jwt) and agent.verified_at is not None
    # And its history records the person's verification
    changes = [(r.change, r.changed_by.get("source")) for r in mind.person.iter_history(agent.id)]
    assert ("verified", "user") in changes


def test_an_agents_memory_verified_elsewhere_arrives_unverified_unless_the_person_vouches(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given an export holding an agent's memory someone verified in the mind it came from
    source = write(tmp_path / "vouched.jsonl", [exported("checked_elsewhere", "agent", True)])
    # When a person imports it without --verify
    result = run_cli("import", str(source), env=person_env(runner, mind))
    # Then it arrives as an agent's, unverified, and the CLI says a verification was not kept
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 created, 0 replaced, 1 kept unverified, 0 failed"
    assert "1 memories verified in the file arrive unverified" in result.stderr
    assert stored(mind.person)["checked_elsewhere"] == ("agent", False)
    # When they import it again with --verify
    again = run_cli("import", "--verify", str(source), env=person_env(runner, mind))
    # Then the person vouches for it
    assert again.returncode == 0, again.stderr
    assert stored(mind.person)["checked_elsewhere"] == ("agent", True)


def test_a_mind_key_import_says_the_persons_memories_arrive_unverified(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    # Given the mixed export
    source = write(tmp_path / "mixed.jsonl", MIXED)
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    # When an agent imports it with its Mind Key
    result = run_cli("import", str(source), env=env)
    # Then everything arrives unverified, and the CLI says what verification was lost
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4 created, 0 replaced, 4 kept unverified, 0 failed"
    assert "2 memories verified in the file arrive unverified" in result.stderr
    assert set(stored(mind.agent).values()) == {("agent", False)}
    # And --verify with a Mind Key is refused before anything is written
    refused = run_cli("import", "--verify", str(source), env=env)
    assert refused.returncode == 1
    assert "--verify needs a person's JWT" in refused.stderr
    with pytest.raises(ValueError, match="needs a person's JWT"):
        transfer.import_records(mind.agent, [], verify=True)


def test_importing_another_tools_file_twice_replaces_and_keeps_it_unverified(
    runner: RunningService, mind: MindClients
) -> None:
    # Given the MCP memory server's graph file
    graph = FIXTURES / "mcp-memory" / "memory.jsonl"
    env = person_env(runner, mind)
    # When a person imports it, then imports it again
    first = run_cli("import", "--from", "mcp-memory", str(graph), env=env)
    again = run_cli("--json", "import", "--from", "mcp-memory", str(graph), env=env)
    # Then the first creates a memory per entity, the second replaces them, none verified
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "5 created, 0 replaced, 5 kept unverified, 0 failed"
    assert json.loads(again.stdout) == {
        "created": 0,
        "replaced": 5,
        "unverified": 5,
        "verified": 0,
        "proposed": 0,
        "failed": 0,
        "skipped_expired": 0,
    }
    assert set(stored(mind.person).values()) == {("agent", False)}
    assert mind.person.find("identity", "entity_default_user") is not None


def test_from_with_a_basic_memory_folder_prints_its_warnings(
    runner: RunningService, mind: MindClients
) -> None:
    notes = FIXTURES / "basic-memory" / "notes"
    result = run_cli("import", "--from", "basic-memory", str(notes), env=person_env(runner, mind))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3 created, 0 replaced, 3 kept unverified, 0 failed"
    assert "warning: basic-memory empty.md: empty content, skipped" in result.stderr
