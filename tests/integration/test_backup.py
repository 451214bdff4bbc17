"""Backup and restore (issue 24 items 1-2, docs/backup.md): a mind with every kind of state comes
back exactly, item by item; broken streams are refused naming the line; a restore is idempotent,
resumable, and only goes into a new or empty mind."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from synapse.portability import backup
from synapse.portability import restore as restoring

from tests.support import backups, teams
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user, assert_error, ok


@pytest.fixture
def source(api: Api) -> tuple[MindHandle, dict[str, str]]:
    return backups.rich_mind(api)


def test_a_restored_mind_equals_its_source_item_by_item_and_as_the_api_shows_it(
    api: Api, dynamo: Any, source: tuple[MindHandle, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind with every kind of state, and its backup taken in pages of 7 lines, reading 2
    # items per query (so each phase spans DynamoDB pages as a large mind's do)
    mind, ids = source
    teams.join(api, mind, "reviewer-7", "reviewer")  # a member besides its owner
    monkeypatch.setattr(backup, "READ_LIMIT", 2)
    data = backups.backup(api, mind, limit=7)
    # When it is restored into a new mind, 9 lines per request
    target = api.create_mind(name="Restored")
    answer = backups.restore(api, target, data, chunk=9)
    # Then the restore is done and says what it restored
    assert answer["status"] == "done" and answer["ids"] == "kept"
    assert answer["counts"] == {
        "mind": 1,
        "key": 2,
        "hook": 1,
        "member": 2,
        "memory": 5,
        "revision": 17,
        "deleted": 1,
        "proposal": 5,
    }
    # And every item of the mind's partition is the source's, the mind id aside (docs/backup.md)
    assert backups.partition(dynamo, target.id) == backups.partition(dynamo, mind.id, as_mind=target.id)
    # And the API shows the same memories, histories, proposals, settings, counts and recall
    assert backups.seen(api, target, ids) == backups.seen(api, mind, ids)
    # And the deleted memory can be restored in the copy as in the source
    restored = ok(
        api.call("POST", f"/memory/{ids['deleted']}/restore", json_body={"version": 1}, **as_user(target))
    )
    assert restored["content"] == "Worked at Acme"
    # And the backup lists the source's members and roles (the copy keeps its own: docs/backup.md)
    members = [json.loads(line) for line in data.splitlines() if b'"kind":"member"' in line]
    assert sorted((m["user_id"], m["role"]) for m in members) == [
        ("reviewer-7", "reviewer"),
        ("user-1", "owner"),
    ]
    assert [
        m["user_id"] for m in ok(api.call("GET", f"/minds/{target.id}/members", token=target.jwt))["members"]
    ] == ["user-1"]
    # And the audit records the restore
    events = ok(api.call("GET", f"/minds/{target.id}/audit", token=target.jwt))["events"]
    restored_events = [e for e in events if e["action"] == "mind.restored"]  # beside the first key's creation
    assert len(restored_events) == 1 and restored_events[0]["target"]["source"]["mind_id"] == mind.id


def test_a_backup_pages_with_a_signed_cursor_and_is_its_owners_alone(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a mind and the first page of its backup
    mind, _ = source
    first = api.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt, query={"limit": 3})
    cursor = first.headers["X-Next-Cursor"]
    lines = first.body.splitlines()
    # Then it holds the header, the mind and its metadata (the first page always does: they are few)
    assert [json.loads(line)["kind"] for line in lines] == ["header", "mind", "key", "key", "hook", "member"]
    # And a changed cursor, or one of another mind, is a 400
    other = api.create_mind("user-2", name="Other")
    for mind_id, token in ((mind.id, cursor[:-2] + "AA"), (other.id, cursor)):
        assert_error(
            api.call(
                "GET",
                f"/minds/{mind_id}/backup",
                token=mind.jwt if mind_id == mind.id else other.jwt,
                query={"cursor": token},
            ),
            400,
        )
    # And another user's mind is a 404, and an agent may not back up a mind
    assert_error(api.call("GET", f"/minds/{mind.id}/backup", token=other.jwt), 404)
    assert api.call("GET", f"/minds/{mind.id}/backup", **as_agent(mind)).status in (401, 403)

    # And the whole backup is the same lines whatever the page size, but its id and time
    def shape(data: bytes) -> list[str]:
        return [line["kind"] for line in map(json.loads, data.splitlines())]

    assert shape(backups.backup(api, mind, limit=1)) == shape(backups.backup(api, mind))


def _sent(api: Api, mind: MindHandle, lines: list[bytes]) -> dict[str, Any]:
    return assert_error(backups.send(api, mind, lines, last=True), 422)


def _edited(line: bytes, **fields: Any) -> bytes:
    return json.dumps({**json.loads(line), **fields}, separators=(",", ":")).encode()


def test_broken_streams_are_refused_naming_the_line(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup and an empty mind
    mind, _ = source
    lines = backups.backup(api, mind).splitlines()
    target = api.create_mind(name="Target")
    memory_line = next(i for i, line in enumerate(lines) if b'"kind":"memory"' in line)
    changed = lines[memory_line].replace(b"Drinks espresso", b"Drinks tea")
    cases = {
        "truncated": (lines[:-1], len(lines), "truncated"),
        "cut mid-line": ([*lines[:-2], lines[-2][:40]], len(lines) - 1, "json"),
        "reordered": ([*lines[:4], lines[5], lines[4], *lines[6:]], 5, "sequence"),
        "tampered": ([*lines[:memory_line], changed, *lines[memory_line + 1 :]], memory_line + 1, "checksum"),
        "wrong version": ([_edited(lines[0], version=2), *lines[1:]], 1, "version"),
        "miscounted": ([*lines[:-1], _edited(lines[-1], lines=3)], len(lines), "count"),
    }
    for name, (stream, line, rule) in cases.items():
        # When it is sent altered
        error = _sent(api, target, stream)
        # Then it is refused with the first bad line named
        assert error["details"][0]["line"] == line and error["details"][0]["rule"] == rule, (name, error)
        assert f"line {line}" in error["message"], name
    # And nothing of the stream was applied before the bad line's chunk
    assert ok(api.call("GET", f"/minds/{target.id}", token=target.jwt))["memory_count"] == 0


def _rechained(lines: list[bytes]) -> list[bytes]:
    """The lines with their `prev` computed again: a stream edited by someone who knows the format."""
    digest, out = b"", []
    for line in lines:
        record = json.loads(line)
        if record["n"] > 1:
            record["prev"] = digest.hex()
        encoded = json.dumps(record, separators=(",", ":")).encode()
        digest = hashlib.sha256(digest + encoded).digest()
        out.append(encoded)
    return out


def test_a_well_chained_line_that_is_no_memory_is_refused_naming_it(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup whose chain is whole, but whose first memory has a priority that is none
    mind, _ = source
    lines = backups.backup(api, mind).splitlines()
    at = next(i for i, line in enumerate(lines) if b'"kind":"memory"' in line)
    record = json.loads(lines[at])
    record["memory"]["priority"] = "urgent"
    lines[at] = json.dumps(record).encode()
    # When it is restored
    target = api.create_mind(name="Target")
    error = _sent(api, target, _rechained(lines))
    # Then the memory's line is named, with the field and the rule a write would refuse it by,
    # and no memory is written
    assert error["details"][0] == {
        "line": at + 1,
        "field": "memory.priority",
        "rule": "enum",
        "message": "must be one of: critical, high, normal, low",
    }, error
    assert ok(api.call("GET", f"/minds/{target.id}", token=target.jwt))["memory_count"] == 0


def test_a_restore_goes_only_into_an_empty_mind_and_only_once(
    api: Api, dynamo: Any, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup, a mind holding a memory, and a mind restored from the backup
    mind, _ = source
    data = backups.backup(api, mind)
    busy = api.create_mind(name="Busy")
    ok(api.store(busy, key="anything"), 201)
    done = api.create_mind(name="Done")
    backups.restore(api, done, data)
    before = backups.partition(dynamo, done.id)
    # When the backup goes into the mind holding a memory: 409, naming why
    error = assert_error(backups.send(api, busy, data.splitlines(), last=True), 409)
    assert error["details"] == [{"line": 1, "rule": "empty_mind"}]
    # And the same backup again into the restored mind: done, nothing doubles
    again = backups.restore(api, done, data, chunk=1000)
    assert again["status"] == "done" and backups.partition(dynamo, done.id) == before
    assert ok(api.call("GET", f"/minds/{done.id}", token=done.jwt))["memory_count"] == 5
    # And another backup into it: 409 naming the backup it holds
    other = backups.backup(api, mind)
    error = assert_error(backups.send(api, done, other.splitlines(), last=True), 409)
    assert error["details"][0]["rule"] == "other_backup"


def test_a_restore_that_fails_half_way_resumes_to_the_same_end_state(
    api: Api, dynamo: Any, source: tuple[MindHandle, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a backup, and a restore whose second transaction of lines fails
    mind, _ = source
    data = backups.backup(api, mind)
    target = api.create_mind(name="Target")
    commit, commits = restoring._commit, []

    def failing(*args: Any) -> bool:
        commits.append(1)
        if len(commits) == 2:
            raise RuntimeError("the Lambda died")
        return commit(*args)

    monkeypatch.setattr(restoring, "_commit", failing)
    assert (
        api.call(
            "POST",
            f"/minds/{target.id}/restore",
            token=target.jwt,
            raw_body=data,
            headers=backups.NDJSON,
            query={"last": "true"},
        ).status
        == 500
    )
    job = restoring.read_job(target.id)
    assert job is not None and job.status == "running" and 2 < job.next_line < len(data.splitlines())
    # When the backup is sent again from its first line, 10 lines at a time
    answer = backups.restore(api, target, data, chunk=10)
    # Then the mind ends as a restore that never failed leaves it
    assert answer["status"] == "done"
    assert backups.partition(dynamo, target.id) == backups.partition(dynamo, mind.id, as_mind=target.id)


def test_a_restore_takes_lines_from_its_owner_from_where_it_stands(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup and an empty mind
    mind, _ = source
    lines = backups.backup(api, mind).splitlines()
    target = api.create_mind(name="Target")
    path = f"/minds/{target.id}/restore"
    body = b"\n".join(lines) + b"\n"
    # Then JSON is not a backup's lines, an agent may not restore, and another user's mind is a 404
    as_json = {"content-type": "application/json"}
    assert_error(api.call("POST", path, token=target.jwt, raw_body=body, headers=as_json), 415)
    assert api.call("POST", path, token=target.key, raw_body=body, headers=backups.NDJSON).status in (
        401,
        403,
    )
    stranger = api.create_mind("user-2", name="Stranger")
    assert_error(api.call("POST", path, token=stranger.jwt, raw_body=body, headers=backups.NDJSON), 404)
    # And before a restore has begun, lines from the middle are a 409 asking for line 1
    error = assert_error(backups.send(api, target, lines[5:9]), 409)
    assert error["details"] == [{"line": 1, "rule": "resume"}]
    # And once it stands at line 4, lines from line 6 are a 409 asking for line 4
    assert ok(backups.send(api, target, lines[:4]))["next_line"] == 4
    error = assert_error(backups.send(api, target, lines[5:9]), 409)
    assert error["details"] == [{"line": 4, "rule": "resume"}]
