"""Verification cannot be forged through a backup (issue 32 item 5, docs/backup.md): a backup's
lines are signed by the deployment that wrote them; a restore keeps a memory's verification
exactly only where this deployment's signature vouches for its line, and otherwise records the
memory as verified by the person restoring, at the restore's time, the file's claim kept on the
revision for the record."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.core import clock

from tests.support import backups
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, ok
from tests.support.clock import START
from tests.support.clock import frozen_clock_fixture as frozen_clock_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

FORGED = {"verified": True, "verified_by": "bob", "verified_at": "2020-05-05T00:00:00.000Z"}
RESTORED_AT = clock.to_iso(START)  # the frozen clock's instant: the restore's time


@pytest.fixture
def source(api: Api, frozen_clock: None) -> tuple[MindHandle, dict[str, str]]:
    return backups.rich_mind(api)


def _forged(lines: list[bytes], memory_id: str) -> list[bytes]:
    """The backup with the memory, and its newest revision, claiming bob verified it."""
    records = [json.loads(line) for line in lines]
    newest = max(
        (i for i, r in enumerate(records) if r["kind"] == "revision" and r["memory_id"] == memory_id),
        key=lambda i: records[i]["version"],
    )
    for at in (backups.line_of(lines, "memory", id=memory_id), newest):
        lines = backups.edited(lines, at, lambda record: record["memory"].update(FORGED))
    return lines


def _shown(api: Api, mind: MindHandle, memory_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The memory as the API shows it, and its newest revision."""
    memory = ok(api.call("GET", f"/memory/{memory_id}", **as_user(mind)))
    history = ok(api.call("GET", f"/memory/{memory_id}/history", **as_user(mind)))["revisions"]
    return memory, history[0]


def test_a_verification_forged_in_an_edited_backup_is_recorded_as_the_restorers(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup edited so that an agent's memory nobody verified, and its history, say bob
    # verified it (the chain computed again, as anyone can)
    mind, ids = source
    lines = _forged(backups.backup(api, mind).splitlines(), ids["agent"])
    # When another person restores it into their mind
    target = api.create_mind("restorer-2", name="Restored")
    answer = backups.restore(api, target, b"\n".join(lines))
    # Then the restore says it could not keep the file's word for trust
    assert answer["status"] == "done" and answer["trust"] == "restorer"
    # And the memory is verified by the person restoring, at the restore's time
    memory, newest = _shown(api, target, ids["agent"])
    assert (memory["verified"], memory["verified_by"], memory["verified_at"]) == (
        True,
        "restorer-2",
        RESTORED_AT,
    )
    assert newest["memory"]["verified_by"] == "restorer-2"
    # And the file's claim is kept on the revision, for the record
    assert newest["claimed"] == {"verified_by": "bob", "verified_at": FORGED["verified_at"]}
    # And the audit records a restore whose trust is the restorer's
    events = ok(api.call("GET", f"/minds/{target.id}/audit", token=target.jwt))["events"]
    restored = [e for e in events if e["action"] == "mind.restored"]
    assert len(restored) == 1 and restored[0]["target"]["trust"] == "restorer"


def test_a_same_deployment_backup_as_written_keeps_who_verified(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given a backup as this deployment wrote it, of a memory user-1 verified
    mind, ids = source
    data = backups.backup(api, mind)
    verified, _ = _shown(api, mind, ids["vouched"])
    # When another person restores it
    target = api.create_mind("restorer-2", name="Restored")
    answer = backups.restore(api, target, data, chunk=7)
    # Then its trust is kept: the memory is verified by user-1, when user-1 verified it
    assert answer["trust"] == "kept"
    memory, newest = _shown(api, target, ids["vouched"])
    assert (memory["verified_by"], memory["verified_at"]) == ("user-1", verified["verified_at"])
    assert "claimed" not in newest


def _unsigned(lines: list[bytes]) -> list[bytes]:
    """The backup as a version without signatures wrote it."""
    stripped = []
    for line in lines:
        record = json.loads(line)
        record.pop("sig", None)
        stripped.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode())
    return backups.rechained(stripped)


def test_an_unsigned_backup_or_another_deployments_is_trusted_to_no_one_but_the_restorer(
    api: Api, source: tuple[MindHandle, dict[str, str]], configure: Configure
) -> None:
    # Given a backup without signatures, and one signed by the same service before its pepper changed
    mind, ids = source
    data = backups.backup(api, mind)
    unsigned = b"\n".join(_unsigned(data.splitlines()))
    configure(SYNAPSE_KEY_PEPPER="another-deployments-pepper-0123456789abcdef")
    for name, backup in (("unsigned", unsigned), ("another deployment", data)):
        # When each is restored
        target = api.create_mind("restorer-2", name=name)
        answer = backups.restore(api, target, backup)
        # Then the verified memory is recorded as verified by the restorer, the file's claim kept
        assert answer["trust"] == "restorer", name
        memory, newest = _shown(api, target, ids["vouched"])
        assert (memory["verified_by"], memory["verified_at"]) == ("restorer-2", RESTORED_AT), name
        assert newest["claimed"]["verified_by"] == "user-1", name
        # And the change that verified it is recorded as the restorer's, the file's maker kept
        history = ok(api.call("GET", f"/memory/{ids['vouched']}/history", **as_user(target)))
        verifying = next(r for r in history["revisions"] if r["change"] == "verified")
        assert verifying["changed_by"] == {"source": "user", "user_id": "restorer-2"}, name
        assert verifying["claimed"]["changed_by"] == {"source": "user", "user_id": "user-1"}, name
        # And an accepted proposal (accepting vouches) is recorded as decided by the restorer
        shown = ok(api.call("GET", "/proposals", query={"status": "accepted"}, **as_user(target)))
        assert [p["decided_by"] for p in shown["proposals"]] == [
            {"source": "user", "user_id": "restorer-2"}
        ], name


def _cut_short(lines: list[bytes], keep: int, seal: str | None = None) -> list[bytes]:
    """The first `keep` lines of a signed backup and a forged trailer after them: `prev` and `sig`
    are the ones the cut line's successor carried (this deployment's, over the lines kept), the
    counts made to fit, and with `seal` that seal (the real trailer's)."""
    successor = json.loads(lines[keep])
    counts: dict[str, int] = {}
    for line in lines[1:keep]:
        kind = json.loads(line)["kind"]
        counts[kind] = counts.get(kind, 0) + 1
    trailer = {
        "n": keep + 1,
        "kind": "end",
        "prev": successor["prev"],
        "sig": successor["sig"],
        **({"seal": seal} if seal else {}),
        "lines": keep,
        "counts": counts,
    }
    return [*lines[:keep], json.dumps(trailer, separators=(",", ":")).encode()]


def test_a_signed_backup_cut_short_under_a_forged_trailer_is_not_kept(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given this deployment's backup cut after its memories and given a trailer with the signature
    # the next line carried (it vouches for the lines kept), with or without the real trailer's seal
    mind, _ = source
    lines = backups.backup(api, mind).splitlines()
    keep = max(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "memory") + 1
    real_seal = json.loads(lines[-1])["seal"]
    for name, seal in (("no seal", None), ("the real trailer's seal", real_seal)):
        # When it is restored
        target = api.create_mind("restorer-2", name=name)
        answer = backups.restore(api, target, b"\n".join(_cut_short(lines, keep, seal)))
        # Then it is done, but its trust is partial: the lines are this deployment's, the end is not
        assert (answer["status"], answer["trust"]) == ("done", "partial"), name
        events = ok(api.call("GET", f"/minds/{target.id}/audit", token=target.jwt))["events"]
        assert [e["target"]["trust"] for e in events if e["action"] == "mind.restored"] == ["partial"]


def test_a_backup_of_the_previous_version_without_a_seal_restores_partial(
    api: Api, source: tuple[MindHandle, dict[str, str]]
) -> None:
    # Given this deployment's backup whose trailer has no seal, as the version before seals wrote it
    mind, ids = source
    lines = backups.backup(api, mind).splitlines()
    trailer = json.loads(lines[-1])
    del trailer["seal"]
    lines[-1] = json.dumps(trailer, separators=(",", ":"), ensure_ascii=False).encode()
    # When it is restored
    target = api.create_mind("restorer-2", name="Restored")
    answer = backups.restore(api, target, b"\n".join(lines), chunk=7)
    # Then it restores whole, its trust partial, and each line's verification is kept (all vouched for)
    assert (answer["status"], answer["trust"]) == ("done", "partial")
    memory, _ = _shown(api, target, ids["vouched"])
    assert memory["verified_by"] == "user-1"
