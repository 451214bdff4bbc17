"""History (issue 12 part 1): every change to a memory is a revision written in the change's own
transaction; GET /memory/{id}/history lists them newest first; POST /memory/{id}/restore brings an
earlier one back, a deleted memory's too; revisions expire by TTL after the mind's retention, the
newest 10 of each memory excepted."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from synapse.index.stream import is_memory_item
from synapse.memory import history, proposals
from synapse.memory.events import from_stream_record
from synapse.storage import tables
from synapse.webhooks import signing

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.races import dynamodb_hook
from tests.support.tables import MEMORIES, scan

DAY = 86_400


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def revisions(api: Api, mind: MindHandle, memory_id: str, **query: Any) -> list[dict[str, Any]]:
    page = ok(api.call("GET", f"/memory/{memory_id}/history", query=query, **as_user(mind)))
    listed: list[dict[str, Any]] = page["revisions"]
    return listed


def mind_table_items(dynamo: Any, mind: MindHandle) -> list[dict[str, Any]]:
    return sorted((i for i in scan(dynamo, MEMORIES) if i["pk"] == mind.id), key=lambda i: str(i["sk"]))


def revision_items(dynamo: Any, mind: MindHandle) -> list[dict[str, Any]]:
    return [i for i in mind_table_items(dynamo, mind) if i["sk"].startswith(history.REVISION_PREFIX)]


def new_hook(api: Api, mind: MindHandle) -> dict[str, Any]:
    return ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}), 201)


def hook_delivery(
    api: Api, mind: MindHandle, body: dict[str, Any], hook: dict[str, Any] | None = None
) -> HttpResponse:
    hook = hook or new_hook(api, mind)
    payload = json.dumps(body).encode()
    signature = signing.header_value([hook["secret"]], payload, int(time.time()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    return api.call("POST", f"/hooks/{hook['id']}", raw_body=payload, headers=headers)


def set_setting(api: Api, mind: MindHandle, **settings: Any) -> None:
    ok(api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=settings))


# ---------------------------------------------------------------- one revision per write, same transaction

Write = Callable[[], HttpResponse]


def _create(api: Api, mind: MindHandle) -> Write:
    return lambda: api.store(mind, key="fresh_key")


def _replace(api: Api, mind: MindHandle) -> Write:
    api.store(mind)
    return lambda: api.store(mind, content="Lives in Hamburg")


def _update(api: Api, mind: MindHandle) -> Write:
    memory = ok(api.store(mind), 201)
    return lambda: api.call("PUT", f"/memory/{memory['id']}", json_body={"tags": ["x"]}, **as_user(mind))


def _verify(api: Api, mind: MindHandle) -> Write:
    memory = ok(api.store(mind, as_agent=True), 201)
    return lambda: api.call("POST", f"/memory/{memory['id']}/verify", **as_user(mind))


def _delete(api: Api, mind: MindHandle) -> Write:
    memory = ok(api.store(mind), 201)
    return lambda: api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind))


def _restore(api: Api, mind: MindHandle) -> Write:
    memory = ok(api.store(mind), 201)
    api.store(mind, content="Lives in Hamburg")
    path = f"/memory/{memory['id']}/restore"
    return lambda: api.call("POST", path, json_body={"version": 1}, **as_user(mind))


def _accept(api: Api, mind: MindHandle) -> Write:
    api.store(mind)
    proposal = ok(api.store(mind, as_agent=True, content="Lives in Hamburg"), 202)["proposal"]
    return lambda: api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind))


def _hook(api: Api, mind: MindHandle) -> Write:
    hook = new_hook(api, mind)
    return lambda: hook_delivery(api, mind, memory_body(key="from_hook"), hook)


def _batch(api: Api, mind: MindHandle) -> Write:
    body = {"memories": [memory_body(key="from_batch")]}
    return lambda: api.call("POST", "/memory/batch", json_body=body, **as_agent(mind))


WRITES = {
    "POST creates": _create,
    "POST replaces by key": _replace,
    "PUT": _update,
    "verify": _verify,
    "DELETE": _delete,
    "restore": _restore,
    "accept": _accept,
    "hook delivery": _hook,
    "batch": _batch,
}


def _refuse(**_: Any) -> None:
    raise tables.client().exceptions.ClientError(
        {"Error": {"Code": "ValidationException", "Message": "injected"}}, "TransactWriteItems"
    )


@pytest.mark.parametrize("path", sorted(WRITES))
def test_every_write_path_leaves_exactly_one_revision_in_the_changes_own_transaction(
    api: Api, mind: MindHandle, dynamo: Any, path: str
) -> None:
    # Given a mind ready for the write
    write = WRITES[path](api, mind)
    before = mind_table_items(dynamo, mind)
    # When DynamoDB fails the write's transaction
    with dynamodb_hook("before-call.dynamodb.TransactWriteItems", _refuse):
        failed = write()
    # Then nothing was written: neither the change nor a revision
    assert failed.status >= 400 or failed.json()["summary"]["failed"] == 1, failed.text
    assert mind_table_items(dynamo, mind) == before
    # When it goes through
    sent: list[list[str]] = []  # per transaction: "<Put|Update|Delete> <sort key>"

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            ops = [next(iter(op.items())) for op in params["TransactItems"]]
            sent.append([f"{kind} {(op.get('Item') or op.get('Key'))['sk']['S']}" for kind, op in ops])

    with dynamodb_hook("before-parameter-build.dynamodb", record):
        assert write().status < 300
    # Then exactly one revision was added, Put in the one transaction that changed the memory
    added = len(revision_items(dynamo, mind)) - len([i for i in before if i["sk"].startswith("REV#")])
    assert added == 1
    changing = [ops for ops in sent if any(op.split(" ")[1].startswith(tables.MEMORY_PREFIX) for op in ops)]
    assert len(changing) == 1, sent
    assert sum(op.startswith(f"Put {history.REVISION_PREFIX}") for op in changing[0]) == 1, changing


# ---------------------------------------------------------------- listing


def test_a_memory_updated_five_times_lists_six_revisions_newest_first_with_who_changed_it(
    api: Api, mind: MindHandle
) -> None:
    # Given a memory an agent created, then changed by the person and an agent, 5 times (in a mind
    # whose agents' changes to verified memories apply directly)
    set_setting(api, mind, agent_writes_to_verified="unverify")
    memory = ok(api.store(mind, as_agent=True, content="v1"), 201)
    path = f"/memory/{memory['id']}"
    for n in range(2, 7):
        credential = as_user(mind) if n % 2 == 0 else as_agent(mind)
        ok(api.call("PUT", path, json_body={"content": f"v{n}"}, **credential))
    # When its history is read
    listed = revisions(api, mind, memory["id"])
    # Then it lists 6 revisions, newest first, each the whole memory after its change
    assert [r["version"] for r in listed] == [6, 5, 4, 3, 2, 1]
    assert [r["memory"]["content"] for r in listed] == ["v6", "v5", "v4", "v3", "v2", "v1"]
    assert [r["change"] for r in listed] == ["updated"] * 5 + ["created"]
    agent = {"source": "agent", "key_id": mind.key_id}
    user = {"source": "user", "user_id": "user-1"}
    assert [r["changed_by"] for r in listed] == [user, agent, user, agent, user, agent]
    assert all(r["changed_at"] == r["memory"]["updated_at"] for r in listed)
    # And it pages with a cursor, newest first, the same revisions
    first = ok(api.call("GET", f"{path}/history", query={"limit": 4}, **as_agent(mind)))
    rest = ok(api.call("GET", f"{path}/history", query={"cursor": first["next_cursor"]}, **as_agent(mind)))
    assert [r["version"] for r in first["revisions"] + rest["revisions"]] == [6, 5, 4, 3, 2, 1]
    assert rest["next_cursor"] is None


def test_history_of_a_memory_that_never_was_is_a_404(api: Api, mind: MindHandle) -> None:
    assert_error(api.call("GET", "/memory/mem_nothing000000000000/history", **as_user(mind)), 404)
    assert_error(api.call("GET", "/memory/not-an-id/history", **as_user(mind)), 404)


def test_a_hook_and_a_verification_are_named_in_the_history(api: Api, mind: MindHandle) -> None:
    answer = ok(hook_delivery(api, mind, memory_body()))
    memory_id = answer["results"][0]["memory"]["id"]
    ok(api.call("POST", f"/memory/{memory_id}/verify", **as_user(mind)))
    listed = revisions(api, mind, memory_id)
    assert [r["change"] for r in listed] == ["verified", "created"]
    assert listed[1]["changed_by"]["source"] == "agent" and listed[1]["changed_by"]["hook_id"].startswith(
        "hook_"
    )
    assert listed[0]["changed_by"] == {"source": "user", "user_id": "user-1"}


# ---------------------------------------------------------------- restore


def test_restoring_version_1_brings_back_its_text_as_a_new_verified_version(
    api: Api, mind: MindHandle
) -> None:
    # Given a memory an agent wrote, then changed twice
    memory = ok(api.store(mind, as_agent=True, content="Lives in Berlin", tags=["home"]), 201)
    path = f"/memory/{memory['id']}"
    ok(api.call("PUT", path, json_body={"content": "Lives in Hamburg", "tags": []}, **as_agent(mind)))
    ok(api.call("PUT", path, json_body={"content": "Lives in Munich", "priority": "high"}, **as_agent(mind)))
    # When the person restores version 1
    restored = ok(api.call("POST", f"{path}/restore", json_body={"version": 1}, **as_user(mind)))
    # Then the memory has version 1's text and tags as version 4, verified by the person
    assert (restored["content"], restored["tags"], restored["priority"]) == (
        "Lives in Berlin",
        ["home"],
        "normal",
    )
    assert restored["version"] == 4 and restored["verified"] is True and restored["verified_by"] == "user-1"
    assert ok(api.call("GET", path, **as_user(mind))) == restored
    # And the history says so
    latest = revisions(api, mind, memory["id"])[0]
    assert (latest["version"], latest["change"]) == (4, "restored")
    assert latest["changed_by"] == {"source": "user", "user_id": "user-1"}


def test_restore_is_for_people_and_needs_a_revision_that_exists(api: Api, mind: MindHandle) -> None:
    memory = ok(api.store(mind), 201)
    path = f"/memory/{memory['id']}/restore"
    assert_error(api.call("POST", path, json_body={"version": 1}, **as_agent(mind)), 403)
    assert_error(api.call("POST", path, json_body={"version": 7}, **as_user(mind)), 404)
    assert_error(api.call("POST", path, json_body={"version": 0}, **as_user(mind)), 422, field="version")


def test_a_deleted_memory_keeps_its_history_and_is_restorable_with_the_same_id(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a memory changed once, then deleted
    memory = ok(api.store(mind, content="Lives in Berlin", tags=["home"]), 201)
    ok(api.call("PUT", f"/memory/{memory['id']}", json_body={"content": "Lives in Hamburg"}, **as_user(mind)))
    assert api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind)).status == 204
    assert_error(api.call("GET", f"/memory/{memory['id']}", **as_user(mind)), 404)
    # Then its history still answers, the last revision `deleted`, and all of it kept 30 days
    listed = revisions(api, mind, memory["id"])
    assert [(r["version"], r["change"]) for r in listed] == [(3, "deleted"), (2, "updated"), (1, "created")]
    ttls = {int(i["ttl"]) for i in revision_items(dynamo, mind)}
    assert len(ttls) == 1 and 29 * DAY < ttls.pop() - time.time() <= 30 * DAY
    # When the person restores version 1
    path = f"/memory/{memory['id']}/restore"
    restored = ok(api.call("POST", path, json_body={"version": 1}, **as_user(mind)))
    # Then it is back with the same id, version 1's text, as version 4; listed, counted and recalled
    assert (restored["id"], restored["content"], restored["version"]) == (memory["id"], "Lives in Berlin", 4)
    assert restored["created_at"] == memory["created_at"]
    assert ok(api.call("GET", f"/memory/{memory['id']}", **as_user(mind))) == restored
    assert ok(api.call("GET", f"/minds/{mind.id}", token=mind.jwt))["memory_count"] == 1
    assert "Lives in Berlin" in api.call("GET", "/memory/recall", **as_agent(mind)).text
    # And its revisions are the live memory's again: no clock on the newest 10
    assert all("ttl" not in i for i in revision_items(dynamo, mind))


def test_a_deleted_memory_whose_key_was_taken_is_a_409(api: Api, mind: MindHandle) -> None:
    memory = ok(api.store(mind), 201)
    assert api.call("DELETE", f"/memory/{memory['id']}", **as_user(mind)).status == 204
    ok(api.store(mind, content="Someone else's now"), 201)
    answer = api.call("POST", f"/memory/{memory['id']}/restore", json_body={"version": 1}, **as_user(mind))
    assert "home_city" in assert_error(answer, 409)["message"]


# ---------------------------------------------------------------- retention


def test_the_newest_ten_revisions_carry_no_clock_and_older_ones_the_minds_retention(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a mind keeping history 7 days, and a memory changed 12 times (13 versions)
    set_setting(api, mind, history_retention_days=7)
    memory = ok(api.store(mind, content="v1"), 201)
    for n in range(2, 14):
        ok(api.call("PUT", f"/memory/{memory['id']}", json_body={"content": f"v{n}"}, **as_user(mind)))
    # Then versions 4-13 carry no ttl, and 1-3 expire 7 days after they left the newest 10
    items = {int(i["version"]): i for i in revision_items(dynamo, mind)}
    assert sorted(items) == list(range(1, 14))
    assert [v for v, i in items.items() if "ttl" in i] == [1, 2, 3]
    assert all(6 * DAY < int(items[v]["ttl"]) - time.time() <= 7 * DAY for v in (1, 2, 3))


def test_an_expired_revision_is_no_longer_listed(api: Api, mind: MindHandle, dynamo: Any) -> None:
    # Given a revision whose ttl has passed (DynamoDB deletes it lazily, within days)
    memory = ok(api.store(mind), 201)
    ok(api.call("PUT", f"/memory/{memory['id']}", json_body={"content": "again"}, **as_user(mind)))
    key = history.revision_key(mind.id, memory["id"], 1)
    dynamo.update_item(
        TableName=MEMORIES,
        Key=tables.dump(key),
        UpdateExpression="SET #ttl = :past",
        ExpressionAttributeNames={"#ttl": "ttl"},
        ExpressionAttributeValues=tables.values(past=int(time.time()) - 1),
    )
    # Then history and restore no longer see it
    assert [r["version"] for r in revisions(api, mind, memory["id"])] == [2]
    path = f"/memory/{memory['id']}/restore"
    assert_error(api.call("POST", path, json_body={"version": 1}, **as_user(mind)), 404)


# ---------------------------------------------------------------- readers that must not see revisions


def test_revisions_and_proposals_make_no_webhook_event_and_are_not_indexed(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a revision item and a proposal item as the stream carries them
    ok(api.store(mind), 201)
    ok(api.store(mind, as_agent=True, content="Lives in Hamburg"), 202)
    items = mind_table_items(dynamo, mind)
    revision = next(i for i in items if i["sk"].startswith(history.REVISION_PREFIX))
    proposal = next(i for i in items if i["sk"].startswith(proposals.PROPOSAL_PREFIX))
    for item in (revision, proposal):
        keys = {"pk": item["pk"], "sk": item["sk"]}
        # Then the search indexer skips them
        assert not is_memory_item(keys)
    # And a revision is no memory event; a proposal only a proposal event
    assert from_stream_record(inserted(revision)) == []
    assert [c.type for c in from_stream_record(inserted(proposal))] == ["proposal.created"]


def inserted(item: dict[str, Any]) -> dict[str, Any]:
    """The stream record of the item's INSERT."""
    keys = {"pk": item["pk"], "sk": item["sk"]}
    return {
        "eventName": "INSERT",
        "eventID": item["sk"],
        "dynamodb": {"Keys": tables.dump(keys), "NewImage": tables.dump(item)},
    }


def test_deleting_the_mind_deletes_its_history_and_proposals(api: Api, mind: MindHandle, dynamo: Any) -> None:
    ok(api.store(mind), 201)
    ok(api.store(mind, as_agent=True, content="Lives in Hamburg"), 202)
    assert revision_items(dynamo, mind)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    assert mind_table_items(dynamo, mind) == []
