"""The audit of a mind's credentials and settings (issue 12 part 4): who changed what and when, newest
first, written in the same transaction as the change, JWT only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from synapse.core import clock
from synapse.storage import tables

from tests.support.api import Api, MindHandle, jwt_for
from tests.support.checks import assert_error
from tests.support.clock import START
from tests.support.clock import ticking_clock_fixture as ticking_clock_fixture
from tests.support.races import dynamodb_hook
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan

WEBHOOK_URL = "http://127.0.0.1:9/synapse"


@pytest.fixture
def mind(api: Api, configure: Configure, ticking_clock: None) -> MindHandle:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    return api.create_mind("alice")


def call(api: Api, mind: MindHandle, method: str, path: str, body: Any = None, status: int = 200) -> Any:
    answer = api.call(method, f"/minds/{mind.id}{path}", token=mind.jwt, json_body=body)
    assert answer.status == status, answer.text
    return answer.json() if answer.text else None


def audit(api: Api, mind: MindHandle, **query: Any) -> dict[str, Any]:
    answer = api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt, query=query)
    assert answer.status == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def every_change(api: Api, mind: MindHandle) -> dict[str, str]:
    """Each audited change once, oldest first; the ids of what was changed."""
    key = call(api, mind, "POST", "/keys", {"label": "ci", "scopes": ["read"]}, 201)
    call(api, mind, "DELETE", f"/keys/{key['id']}", status=204)
    hook = call(api, mind, "POST", "/hooks", {"label": "voice-bot"}, 201)
    call(api, mind, "POST", f"/hooks/{hook['id']}/rotate", {"grace_seconds": 60})
    call(api, mind, "DELETE", f"/hooks/{hook['id']}", status=204)
    webhook = call(api, mind, "POST", "/webhooks", {"url": WEBHOOK_URL, "events": ["memory.created"]}, 201)
    call(api, mind, "PATCH", f"/webhooks/{webhook['id']}", {"enabled": False})
    call(api, mind, "DELETE", f"/webhooks/{webhook['id']}", status=204)
    call(api, mind, "PATCH", "", {"name": "Work"})
    call(api, mind, "PATCH", "", {"agent_writes_to_verified": "unverify", "history_retention_days": 30})
    return {"key": key["id"], "hook": hook["id"], "webhook": webhook["id"]}


def test_every_credential_and_setting_change_is_listed_newest_first_with_who_and_when(
    api: Api, mind: MindHandle
) -> None:
    # Given every kind of audited change made by the mind's owner
    ids = every_change(api, mind)
    # When the owner reads the audit
    events = audit(api, mind, limit=100)
    # Then each change is there once, newest first
    assert [e["action"] for e in events["events"]] == [
        "mind.settings_changed",
        "mind.renamed",
        "webhook.deleted",
        "webhook.updated",
        "webhook.created",
        "hook.revoked",
        "hook.rotated",
        "hook.created",
        "key.revoked",
        "key.created",
        "key.created",  # the mind's first key, made with it
    ]
    assert events["next_cursor"] is None
    # And each says who and when
    stamps = [e["at"] for e in events["events"]]
    assert stamps == sorted(stamps, reverse=True) and all(s > START.isoformat()[:19] for s in stamps)
    assert all(e["by"] == {"source": "user", "user_id": "alice"} for e in events["events"])
    assert all(e["id"].startswith("aud_") for e in events["events"])
    # And what was changed
    target = {e["action"]: e["target"] for e in events["events"][:-1]}
    assert target["key.created"] == {"key_id": ids["key"], "label": "ci", "scopes": ["read"]}
    assert target["key.revoked"] == {"key_id": ids["key"], "label": "ci"}
    assert target["hook.created"] == {"hook_id": ids["hook"], "label": "voice-bot"}
    assert target["hook.rotated"] == {"hook_id": ids["hook"], "label": "voice-bot", "grace_seconds": 60}
    assert target["webhook.updated"] == {
        "webhook_id": ids["webhook"],
        "url": WEBHOOK_URL,
        "changed": ["enabled"],
    }
    assert target["webhook.deleted"] == {"webhook_id": ids["webhook"], "url": WEBHOOK_URL}
    assert target["mind.renamed"] == {"from": "Michael's Mind", "to": "Work"}
    assert target["mind.settings_changed"] == {
        "settings": {
            "agent_writes_to_verified": {"from": "propose", "to": "unverify"},
            "history_retention_days": {"from": 90, "to": 30},
        }
    }
    # And no secret is in it (a secret starts a token; a random id may hold "mk_" inside it)
    shown = str(events)
    assert not re.search(r"(?<![A-Za-z0-9_-])(whsec|mk)_", shown), shown


def test_a_new_minds_audit_starts_with_its_first_keys_creation(api: Api, mind: MindHandle) -> None:
    # When the owner reads the audit of a mind just created (POST /minds made its first key)
    events = audit(api, mind)["events"]
    # Then that key's creation is there, by the owner
    assert [(e["action"], e["target"], e["by"]) for e in events] == [
        (
            "key.created",
            {"key_id": mind.key_id, "label": "default", "scopes": ["read", "write", "delete"]},
            {"source": "user", "user_id": "alice"},
        )
    ]


def test_the_audit_is_paginated_with_signed_cursors(api: Api, mind: MindHandle) -> None:
    # Given ten audited changes
    every_change(api, mind)
    # When the audit is read three at a time
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = audit(api, mind, limit=3, **({"cursor": cursor} if cursor else {}))
        seen += [e["action"] for e in page["events"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    # Then the pages together are the whole audit, newest first, each event once
    assert pages == 4 and len(seen) == 11 and seen[0] == "mind.settings_changed" and seen[-1] == "key.created"
    # And a cursor of another list, or a forged one, is a 400 naming `cursor`
    call(api, mind, "POST", "/keys", {"label": "second"}, 201)
    keys_cursor = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt, query={"limit": 1})
    for bad in (keys_cursor.json()["next_cursor"], "forged.cursor"):
        answer = api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt, query={"cursor": bad})
        assert_error(answer, 400, field="cursor")


def test_the_audit_is_for_the_owner_with_a_jwt_only(api: Api, mind: MindHandle) -> None:
    # Given a mind with an audited change, and another user's mind
    call(api, mind, "PATCH", "", {"name": "Work"})
    stranger = api.create_mind("bob")
    # When its Mind Key, the other user, or anyone for a missing mind asks for the audit
    by_key = api.call("GET", f"/minds/{mind.id}/audit", token=mind.key)
    by_stranger = api.call("GET", f"/minds/{mind.id}/audit", token=stranger.jwt)
    missing = api.call("GET", "/minds/m_doesnotexist/audit", token=mind.jwt)
    anonymous = api.call("GET", f"/minds/{mind.id}/audit")
    # Then the key is refused, the foreign mind answers like a missing one, no credential is a 401
    assert_error(by_key, 403)
    assert by_stranger.status == missing.status == 404
    assert by_stranger.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
    assert_error(anonymous, 401)


def test_each_event_is_written_in_the_transaction_of_its_change(api: Api, mind: MindHandle) -> None:
    # Given every DynamoDB write the audited changes send is recorded
    sent: list[tuple[str, list[str]]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            items = [next(iter(op.values())) for op in params["TransactItems"]]
            keys = [(op.get("Item") or op.get("Key"))["sk"]["S"] for op in items]
            sent.append((model.name, keys))
        elif model.name in {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}:
            sent.append((model.name, []))

    with dynamodb_hook("before-parameter-build.dynamodb", record):
        # When every kind of audited change is made
        every_change(api, mind)
    # Then each is one transaction holding the change and its one audit event, and nothing else writes
    assert [name for name, _ in sent] == ["TransactWriteItems"] * 10
    for _, keys in sent:
        assert sum(key.startswith("AUDIT#") for key in keys) in {1, 2}, keys
        assert any(not key.startswith("AUDIT#") for key in keys), keys


def test_a_change_whose_transaction_fails_leaves_no_audit_event(api: Api, mind: MindHandle) -> None:
    # Given DynamoDB refuses the next transactions
    before = audit(api, mind)["events"]

    def refuse(**_: Any) -> None:
        raise tables.client().exceptions.InternalServerError(
            {"Error": {"Code": "InternalServerError", "Message": "injected"}}, "TransactWriteItems"
        )

    with dynamodb_hook("before-call.dynamodb.TransactWriteItems", refuse):
        # When a key is created and the mind renamed
        created = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "x"})
        renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "Work"})
    # Then both fail, and neither the change nor its event is there
    assert created.status >= 400 and renamed.status >= 400
    assert audit(api, mind)["events"] == before
    keys = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]
    assert [key["id"] for key in keys] == [mind.key_id]
    assert call(api, mind, "GET", "")["name"] == "Michael's Mind"


def test_a_change_to_nothing_records_nothing(api: Api, mind: MindHandle) -> None:
    # When the mind is renamed to its own name and a setting set to what it is
    before = audit(api, mind)["events"]
    same = call(api, mind, "PATCH", "", {"name": "Michael's Mind", "history_retention_days": 90})
    # Then the mind is unchanged and nothing is added to the audit
    assert same["updated_at"] == same["created_at"]
    assert audit(api, mind)["events"] == before


def test_deleting_the_mind_deletes_its_audit(api: Api, mind: MindHandle, dynamo: Any) -> None:
    # Given a mind with audit events
    every_change(api, mind)
    assert any(item["sk"].startswith("AUDIT#") for item in scan(dynamo, MINDS))
    # When the mind is deleted
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # Then no audit item of it is left
    assert not any(item["sk"].startswith("AUDIT#") for item in scan(dynamo, MINDS))
    assert api.call("GET", f"/minds/{mind.id}/audit", token=jwt_for("alice")).status == 404


def test_audit_events_expire_after_90_days(api: Api, mind: MindHandle, dynamo: Any) -> None:
    # When an audited change is made
    call(api, mind, "PATCH", "", {"name": "Work"})
    # Then its event carries a TTL 90 days after it was made
    event = audit(api, mind)["events"][0]
    (item,) = [i for i in scan(dynamo, MINDS) if i["sk"].startswith("AUDIT#") and i["id"] == event["id"]]
    made = clock.from_iso(event["at"])
    assert int(item["ttl"]) == int(made.timestamp()) + 90 * 24 * 3600
