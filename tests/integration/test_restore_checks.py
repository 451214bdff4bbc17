"""A restore checks every line as the matching write would (issue 32 item 4, docs/backup.md): a
backup edited and chained again, with a value PATCH /minds, POST /memory or a proposal's write
would refuse, is refused with a 422 naming the line, the field and the rule, and nothing of the
chunk is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.portability import restore as restoring

from tests.support import backups
from tests.support.api import Api, MindHandle
from tests.support.checks import assert_error, ok

Change = Callable[[dict[str, Any]], Any]


def _memory(**fields: Any) -> Change:
    return lambda record: record["memory"].update(fields)


def _fields(**fields: Any) -> Change:
    return lambda record: record.update(fields)


def _settings(**fields: Any) -> Change:
    return lambda record: record["settings"].update(fields)


def _proposed(**fields: Any) -> Change:
    return lambda record: record["proposed"].update(fields)


class Case(NamedTuple):
    kind: str  # of the line changed
    change: Change
    field: str  # that the refusal names
    rule: str
    raw: dict[str, str] = {}  # noqa: RUF012 - placeholders for JSON text no encoder writes


CASES = {
    "retention in words": Case(
        "mind", _settings(history_retention_days="ninety"), "settings.history_retention_days", "type"
    ),
    "retention of 0 days": Case(
        "mind", _settings(history_retention_days=0), "settings.history_retention_days", "range"
    ),
    "an unknown setting": Case(
        "mind", _settings(agent_writes_critical="sometimes"), "settings.agent_writes_critical", "enum"
    ),
    "a setting left out": Case(
        "mind", _settings(agent_writes_to_verified=None), "settings.agent_writes_to_verified", "required"
    ),
    "40 KiB of content": Case("memory", _memory(content="x" * 40 * 1024), "memory.content", "size"),
    "30 tags": Case("memory", _memory(tags=[f"tag{i}" for i in range(30)]), "memory.tags", "max_items"),
    "a tag twice": Case("memory", _memory(tags=["drinks", "drinks"]), "memory.tags", "normalized"),
    "a tag in capitals": Case("memory", _memory(tags=["Drinks"]), "memory.tags", "normalized"),
    "a tag of 65 characters": Case("memory", _memory(tags=["x" * 65]), "memory.tags", "length"),
    "a lone surrogate in a tag": Case("memory", _memory(tags=["\ud800"]), "memory.tags[0]", "text"),
    "confidence 5.0": Case("memory", _memory(confidence=5.0), "memory.confidence", "range"),
    "confidence NaN": Case("memory", _memory(confidence="@n"), "memory.confidence", "number", {"@n": "NaN"}),
    "confidence 1e999": Case(
        "memory", _memory(confidence="@n"), "memory.confidence", "number", {"@n": "1e999"}
    ),
    "confidence -Infinity": Case(
        "memory", _memory(confidence="@n"), "memory.confidence", "number", {"@n": "-Infinity"}
    ),
    "confidence in words": Case("memory", _memory(confidence="high"), "memory.confidence", "type"),
    "verified_by on an unverified memory": Case(
        "memory", _memory(verified=False, verified_by="bob"), "memory.verified_by", "unverified"
    ),
    "version -7": Case("memory", _memory(version=-7), "memory.version", "range"),
    "version as text": Case("memory", _memory(version="7"), "memory.version", "type"),
    "a key that is none": Case("memory", _memory(key="Home City"), "memory.key", "pattern"),
    "an unknown priority": Case("memory", _memory(priority="urgent"), "memory.priority", "enum"),
    "key_derived in words": Case("memory", _memory(key_derived="yes"), "memory.key_derived", "type"),
    "an unknown source": Case("memory", _memory(source="robot"), "memory.source", "enum"),
    "created_at in words": Case("memory", _memory(created_at="yesterday"), "memory.created_at", "format"),
    "a revision's memory NaN": Case(
        "revision", _memory(confidence="@n"), "memory.confidence", "number", {"@n": "NaN"}
    ),
    "a revision by 600 characters": Case(
        "revision",
        _fields(changed_by={"source": "user", "user_id": "u" * 600}),
        "changed_by.user_id",
        "length",
    ),
    "a revision's ttl of 10^50": Case("revision", _fields(ttl=10**50), "ttl", "range"),
    "base_version as text": Case("proposal", _fields(base_version="abc"), "base_version", "type"),
    "base_version 1.5": Case("proposal", _fields(base_version=1.5), "base_version", "type"),
    "an unknown proposed priority": Case(
        "proposal", _proposed(priority="urgent"), "proposed.priority", "enum"
    ),
    "a proposed confidence 1e999": Case(
        "proposal", _proposed(confidence="@n"), "proposed.confidence", "number", {"@n": "1e999"}
    ),
    "40 KiB proposed": Case("proposal", _proposed(content="x" * 40 * 1024), "proposed.content", "size"),
    "an unknown proposal status": Case("proposal", _fields(status="maybe"), "status", "enum"),
    "a key's NaN": Case("key", _fields(created_at="@n"), "created_at", "number", {"@n": "NaN"}),
    "a header's 5000-character name": Case(
        "header", lambda r: r["source"].update(mind_name="x" * 5000), "source.mind_name", "length"
    ),
}


def _backup(api: Api) -> list[bytes]:
    mind, _ = backups.rich_mind(api)
    return backups.backup(api, mind).splitlines()


def _nothing_written(api: Api, target: MindHandle) -> None:
    assert ok(api.call("GET", f"/minds/{target.id}", token=target.jwt))["memory_count"] == 0
    assert restoring.read_job(target.id) is None


def test_each_value_a_write_would_refuse_is_refused_naming_line_field_and_rule(api: Api) -> None:
    # Given a backup, and an empty mind
    lines = _backup(api)
    target = api.create_mind(name="Target")
    for name, (kind, change, field, rule, raw) in CASES.items():
        # When the backup is restored with one line changed so, and chained again
        at = backups.line_of(lines, kind)
        answer = backups.send(api, target, backups.edited(lines, at, change, **raw), last=True)
        # Then it is refused: a 422 naming the line, its field and the rule it breaks
        error = assert_error(answer, 422)
        detail = error["details"][0]
        assert (detail["line"], detail["field"], detail["rule"]) == (at + 1, field, rule), (name, error)
        assert error["message"].startswith(f"line {at + 1}: {field}: "), (name, error)
        # And nothing of it was written: no memory, no restore job
        _nothing_written(api, target)
    # And the backup as it is (an expired memory in it) restores whole
    assert backups.restore(api, target, b"\n".join(lines))["status"] == "done"


def test_a_chunk_refused_leaves_the_restore_where_it_stood(api: Api) -> None:
    # Given a restore that applied its first chunk
    lines = _backup(api)
    target = api.create_mind(name="Target")
    at = backups.line_of(lines, "memory")
    changed = backups.edited(lines, at + 1, _memory(confidence=5.0))
    assert ok(backups.send(api, target, changed[:at]))["next_line"] == at
    before = restoring.read_job(target.id)
    # When the next chunk holds a memory a write would refuse, after one it would take
    answer = backups.send(api, target, changed[at - 1 : at + 4])
    # Then it is refused naming that line, and the job stands where it stood: nothing applied
    assert assert_error(answer, 422)["details"][0]["line"] == at + 2
    assert restoring.read_job(target.id) == before
    assert ok(api.call("GET", f"/minds/{target.id}", token=target.jwt))["memory_count"] == 0
