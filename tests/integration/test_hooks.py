"""Inbound hooks (issue 5): managing hooks, and signed deliveries that store agent memories."""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.memory.keys import derived_key
from synapse.webhooks import batch as batches
from synapse.webhooks import idempotency, signing

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, jwt_for, memory_body
from tests.support.checks import as_agent, assert_error
from tests.support.tables import MEMORIES, MINDS, mind_items, scan


@dataclass
class Hook:
    id: str
    secret: str
    mind: MindHandle


def create_hook(api: Api, mind: MindHandle, **body: Any) -> Hook:
    answer = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body=body)
    assert answer.status == 201, answer.text
    data = answer.json()
    return Hook(data["id"], data["secret"], mind)


def deliver(
    api: Api,
    hook: Hook | str,
    body: Any,
    *,
    secrets: list[str] | None = None,
    at: int | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> HttpResponse:
    """POST /hooks/{id}, signed as a platform would: over the exact bytes sent."""
    hook_id = hook if isinstance(hook, str) else hook.id
    payload = raw if raw is not None else json.dumps(body).encode()
    keys = secrets if secrets is not None else [hook.secret] if isinstance(hook, Hook) else []
    signature = signing.header_value(keys, payload, at if at is not None else int(time.time()))
    sent = {"content-type": "application/json", signing.HEADER: signature, **(headers or {})}
    return api.call("POST", f"/hooks/{hook_id}", raw_body=payload, headers=sent)


def stored_memories(dynamo: Any, mind: MindHandle) -> list[dict[str, Any]]:
    return mind_items(dynamo, mind.id)["memory"]


def batch(n: int) -> dict[str, Any]:
    return {"memories": [memory_body(key=f"fact_{i}", content=f"fact number {i}") for i in range(n)]}


# ---------------------------------------------------------------- management


def test_creating_a_hook_shows_its_url_and_secret_once(api: Api, dynamo: Any) -> None:
    # Given a person's mind
    mind = api.create_mind()
    # When they create a hook, calling through the API's own host name
    answer = api.call(
        "POST",
        f"/minds/{mind.id}/hooks",
        token=mind.jwt,
        json_body={"label": "voice-bot"},
        headers={"host": "api.example.com"},
    )
    # Then they get its id, an absolute URL, the label and a secret in plain text
    assert answer.status == 201, answer.text
    hook = answer.json()
    assert hook["id"].startswith("hook_") and hook["label"] == "voice-bot"
    assert hook["url"] == f"https://api.example.com/hooks/{hook['id']}"
    assert hook["secret"].startswith("whsec_") and len(hook["secret"]) > 40
    # And the list shows the hook without its secret, only a prefix to recognise it by
    listed = api.call("GET", f"/minds/{mind.id}/hooks", token=mind.jwt)
    assert listed.status == 200, listed.text
    (entry,) = listed.json()["hooks"]
    assert entry["id"] == hook["id"] and entry["secret_prefix"] == hook["secret"][:10]
    assert hook["secret"] not in listed.text
    # And the table holds it sealed, never in plain text
    assert hook["secret"] not in json.dumps(scan(dynamo, MINDS), default=str)


@pytest.mark.parametrize(
    ("headers", "base"),
    [
        ({"host": "127.0.0.1:8787"}, "http://127.0.0.1:8787"),  # the local runner
        ({"host": "api.example.com", "x-forwarded-proto": "https"}, "https://api.example.com"),
        ({"host": "evil.example/x?"}, ""),  # not a host name: a relative URL rather than a wrong one
    ],
)
def test_a_hooks_url_follows_the_host_it_was_created_through(
    api: Api, headers: dict[str, str], base: str
) -> None:
    mind = api.create_mind()
    answer = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, headers=headers)
    assert answer.json()["url"] == f"{base}/hooks/{answer.json()['id']}"


def test_a_hook_without_a_label_is_labelled_default(api: Api) -> None:
    mind = api.create_mind()
    answer = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt)
    assert answer.status == 201, answer.text
    assert answer.json()["label"] == "default"


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "/hooks", {"label": "x"}),
        ("GET", "/hooks", None),
        ("DELETE", "/hooks/hook_aaaaaaaaaaaaaaaaaaaaaa", None),
        ("POST", "/hooks/hook_aaaaaaaaaaaaaaaaaaaaaa/rotate", {}),
    ],
)
def test_a_mind_key_may_not_manage_hooks(api: Api, method: str, suffix: str, body: Any) -> None:
    # Given an agent holding the mind's Mind Key
    mind = api.create_mind()
    # When it tries to manage hooks, Then it is refused
    answer = api.call(method, f"/minds/{mind.id}{suffix}", json_body=body, **as_agent(mind))
    assert_error(answer, 403)


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "/hooks", {"label": "x"}),
        ("GET", "/hooks", None),
        ("DELETE", "/hooks/{hook}", None),
        ("POST", "/hooks/{hook}/rotate", {}),
    ],
)
def test_another_users_mind_and_hooks_are_not_found(api: Api, method: str, suffix: str, body: Any) -> None:
    # Given someone else's mind with a hook
    theirs = api.create_mind("user-2")
    hook = create_hook(api, theirs)
    # When I address it, Then it is a 404, as if it did not exist
    mine = jwt_for("user-1")
    path = f"/minds/{theirs.id}" + suffix.format(hook=hook.id)
    assert_error(api.call(method, path, token=mine, json_body=body), 404)
    # And addressing their hook under my own mind is a 404 too
    own = api.create_mind("user-1")
    path = f"/minds/{own.id}" + suffix.format(hook=hook.id)
    if "{hook}" in suffix:
        assert_error(api.call(method, path, token=own.jwt, json_body=body), 404)
    # And their hook still works
    assert deliver(api, hook, memory_body()).status == 200


def test_rotation_grace_is_bounded(api: Api) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    path = f"/minds/{mind.id}/hooks/{hook.id}/rotate"
    too_long = api.call("POST", path, token=mind.jwt, json_body={"grace_seconds": 7 * 24 * 3600 + 1})
    assert_error(too_long, 422, field="grace_seconds", rule="range")
    negative = api.call("POST", path, token=mind.jwt, json_body={"grace_seconds": -1})
    assert_error(negative, 422, field="grace_seconds", rule="range")


def test_a_rotation_racing_the_hooks_deletion_is_a_404(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.storage import tables

    # Given a hook that its owner deletes right as its rotation lands
    mind = api.create_mind()
    hook = create_hook(api, mind)
    rotate = tables.transact

    def rotated_then_deleted(operations: list[dict[str, Any]]) -> None:
        monkeypatch.setattr(tables, "transact", rotate)  # once
        rotate(operations)
        assert api.call("DELETE", f"/minds/{mind.id}/hooks/{hook.id}", token=mind.jwt).status == 204

    monkeypatch.setattr(tables, "transact", rotated_then_deleted)
    # When the rotation answers
    answer = api.call("POST", f"/minds/{mind.id}/hooks/{hook.id}/rotate", token=mind.jwt, json_body={})
    # Then it is a 404 like the hook's, not a 500
    assert_error(answer, 404)


# ---------------------------------------------------------------- deliveries: storing


def test_a_signed_delivery_of_one_memory_stores_it_as_an_agent_memory(api: Api) -> None:
    # Given a hook
    mind = api.create_mind()
    hook = create_hook(api, mind)
    # When the platform posts one memory (the POST /memory body), signed
    answer = deliver(api, hook, memory_body(key="favourite_tea", content="Earl Grey", tags=["Drinks"]))
    # Then the answer lists its outcome
    assert answer.status == 200, answer.text
    body = answer.json()
    assert body["summary"] == {"created": 1, "replaced": 0, "proposed": 0, "failed": 0}
    (result,) = body["results"]
    assert result["index"] == 0 and result["status"] == "created"
    # And it is an unverified agent memory of that mind
    memory = api.call("GET", f"/memory/{result['memory']['id']}", **as_agent(mind)).json()
    assert (memory["source"], memory["verified"], memory["confidence"]) == ("agent", False, 0.7)
    assert memory["key"] == "favourite_tea" and memory["tags"] == ["drinks"]
    # And the hook list shows when it last delivered
    (listed,) = api.call("GET", f"/minds/{mind.id}/hooks", token=mind.jwt).json()["hooks"]
    assert listed["last_delivery_at"] is not None and listed["last_delivery_at"] >= listed["created_at"]


def test_a_delivery_stored_again_by_key_is_replaced(api: Api) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    deliver(api, hook, memory_body(content="Lives in Berlin"))
    again = deliver(api, hook, memory_body(content="Lives in Hamburg"))
    (result,) = again.json()["results"]
    assert (result["status"], result["memory"]["version"]) == ("replaced", 2)


def test_a_delivery_of_content_alone_is_a_note_keyed_as_post_memory_keys_it(api: Api) -> None:
    # Given a hook
    mind = api.create_mind()
    hook = create_hook(api, mind)
    # When the platform posts content alone, then the same text again (spaced otherwise)
    first = deliver(api, hook, {"content": "Prefers window seats"}).json()["results"][0]
    again = deliver(api, hook, {"content": "prefers  window SEATS"}).json()["results"][0]
    # Then it is one note, keyed by the server's derivation, replaced the second time
    assert (first["status"], first["memory"]["category"]) == ("created", "note")
    assert first["memory"]["key"] == derived_key("note", "Prefers window seats")
    assert (again["status"], again["memory"]["id"], again["memory"]["version"]) == (
        "replaced",
        first["memory"]["id"],
        2,
    )


def test_a_batch_of_100_with_3_invalid_items_stores_97_and_reports_the_3(api: Api, dynamo: Any) -> None:
    # Given a batch of 100 memories, three of which break a rule each
    mind = api.create_mind()
    hook = create_hook(api, mind)
    body = batch(100)
    body["memories"][7]["key"] = "Not Snake Case"
    body["memories"][42]["category"] = "gossip"
    body["memories"][99]["content"] = ""
    # When it is delivered
    answer = deliver(api, hook, body)
    # Then the other 97 are stored
    assert answer.status == 200, answer.text
    data = answer.json()
    assert data["summary"] == {"created": 97, "replaced": 0, "proposed": 0, "failed": 3}
    assert len(stored_memories(dynamo, mind)) == 97
    # And every item has its outcome, in order; the three name their index, field and rule
    assert [r["index"] for r in data["results"]] == list(range(100))
    failed = {r["index"]: r["error"] for r in data["results"] if r["status"] == "error"}
    assert sorted(failed) == [7, 42, 99]
    expected = {7: ("key", "pattern"), 42: ("category", "enum"), 99: ("content", "length")}
    for index, (field, rule) in expected.items():
        assert failed[index]["code"] == "validation_error"
        assert {"field": field, "rule": rule} in [
            {"field": d["field"], "rule": d["rule"]} for d in failed[index]["details"]
        ], failed[index]


def test_batch_items_that_are_not_objects_or_claim_user_source_fail_alone(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    body = {"memories": [memory_body(key="a"), "text", memory_body(key="b", source="user"), None]}
    data = deliver(api, hook, body).json()
    assert [r["status"] for r in data["results"]] == ["created", "error", "error", "error"]
    assert data["results"][2]["error"]["code"] == "forbidden"
    assert [m["key"] for m in stored_memories(dynamo, mind)] == ["a"]


@pytest.mark.parametrize(
    "body",
    [
        {"memories": []},
        {"memories": "nope"},
        batch(101),
        {"memories": [memory_body()], "extra": 1},
    ],
    ids=["empty", "not-a-list", "101-items", "extra-field"],
)
def test_a_batch_body_of_the_wrong_shape_is_a_422_and_stores_nothing(
    api: Api, dynamo: Any, body: dict[str, Any]
) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    assert_error(deliver(api, hook, body), 422)
    assert stored_memories(dynamo, mind) == []


def test_a_delivery_over_one_mebibyte_is_a_413(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    body = {"memories": [memory_body(key=f"k{i}", content="x" * 30_000) for i in range(36)]}
    assert_error(deliver(api, hook, body), 413)
    assert stored_memories(dynamo, mind) == []


def test_a_batch_larger_than_64_kib_is_accepted(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    body = {"memories": [memory_body(key=f"k{i}", content="x" * 30_000) for i in range(10)]}
    answer = deliver(api, hook, body)
    assert answer.status == 200, answer.text
    assert answer.json()["summary"]["created"] == 10


def test_a_base64_encoded_body_is_verified_over_its_decoded_bytes(api: Api, dynamo: Any) -> None:
    # Given a body that is not UTF-8 text as a whole (a Latin-1 byte), so the gateway base64-encodes it
    mind = api.create_mind()
    hook = create_hook(api, mind)
    raw = json.dumps(memory_body()).encode() + b" \xff"
    # When it is delivered signed over the raw bytes
    answer = deliver(api, hook, None, raw=raw)
    # Then the signature holds, and the body is refused as JSON, not as a forgery
    assert_error(answer, 400)
    assert stored_memories(dynamo, mind) == []


# ---------------------------------------------------------------- deliveries: authentication


def _refused(answer: HttpResponse) -> None:
    error = assert_error(answer, 401)
    assert error["code"] == "unauthorized"


def test_a_wrong_signature_is_a_401_and_stores_nothing(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    _refused(deliver(api, hook, memory_body(), secrets=["whsec_not-the-secret"]))
    assert stored_memories(dynamo, mind) == []


@pytest.mark.parametrize("offset", [-301, 301, -3600, 86400])
def test_a_timestamp_outside_five_minutes_is_a_401_and_stores_nothing(
    api: Api, dynamo: Any, offset: int
) -> None:
    # Given a delivery signed with the right secret but too long ago (or too far ahead)
    mind = api.create_mind()
    hook = create_hook(api, mind)
    answer = deliver(api, hook, memory_body(), at=int(time.time()) + offset)
    # Then it is refused
    _refused(answer)
    assert "timestamp" in answer.json()["error"]["message"]
    assert stored_memories(dynamo, mind) == []


def test_a_tampered_body_is_a_401_and_stores_nothing(api: Api, dynamo: Any) -> None:
    # Given a correctly signed delivery whose body is changed on the way
    mind = api.create_mind()
    hook = create_hook(api, mind)
    signed = json.dumps(memory_body(content="Lives in Berlin")).encode()
    header = signing.header_value([hook.secret], signed)
    tampered = signed.replace(b"Berlin", b"Moscow")
    # When it arrives, Then it is refused
    answer = api.call(
        "POST",
        f"/hooks/{hook.id}",
        raw_body=tampered,
        headers={"content-type": "application/json", signing.HEADER: header},
    )
    _refused(answer)
    assert stored_memories(dynamo, mind) == []


def test_a_revoked_hook_answers_exactly_like_an_unknown_one(api: Api, dynamo: Any) -> None:
    # Given a hook that worked, then was revoked
    mind = api.create_mind()
    hook = create_hook(api, mind)
    assert deliver(api, hook, memory_body(key="before")).status == 200
    revoked = api.call("DELETE", f"/minds/{mind.id}/hooks/{hook.id}", token=mind.jwt)
    assert revoked.status == 204, revoked.text
    # When a correctly signed delivery comes for it
    answer = deliver(api, hook, memory_body(key="after"))
    # Then it is a 401, word for word what a hook that never existed or a bad signature gets
    _refused(answer)
    never = deliver(api, Hook("hook_" + "n" * 22, hook.secret, mind), memory_body(key="after"))
    wrong = deliver(api, create_hook(api, mind), memory_body(key="after"), secrets=[hook.secret])
    assert answer.json()["error"] == never.json()["error"] == wrong.json()["error"]
    # And nothing more was stored, and the hook is gone from the list and the table
    assert [m["key"] for m in stored_memories(dynamo, mind)] == ["before"]
    assert [h["id"] for h in api.call("GET", f"/minds/{mind.id}/hooks", token=mind.jwt).json()["hooks"]] != [
        hook.id
    ]
    assert not [i for i in scan(dynamo, MINDS) if hook.id in i["pk"] + i["sk"] and "IDEM" not in i["pk"]]


def test_a_hook_delete_cut_short_never_leaves_a_working_hook_nobody_can_see(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a hook whose DELETE dies after DynamoDB took only part of its deletes
    from synapse.storage import tables

    mind = api.create_mind()
    hook = create_hook(api, mind)
    whole = tables.batch_delete

    def cut_short(table: str, keys: list[dict[str, str]]) -> None:
        whole(table, keys[-1:])
        raise TimeoutError("Task timed out")

    monkeypatch.setattr(tables, "batch_delete", cut_short)
    api.call("DELETE", f"/minds/{mind.id}/hooks/{hook.id}", token=mind.jwt)
    monkeypatch.undo()
    # When a signed delivery comes, and the hooks are listed
    works = deliver(api, hook, memory_body()).status == 200
    hooks = api.call("GET", f"/minds/{mind.id}/hooks", token=mind.jwt).json()["hooks"]
    # Then the hook is revoked whole or not at all: one that still takes deliveries is listed
    assert works == (hook.id in [h["id"] for h in hooks])
    if works:
        assert api.call("DELETE", f"/minds/{mind.id}/hooks/{hook.id}", token=mind.jwt).status == 204
    _refused(deliver(api, hook, memory_body(key="after")))


def test_a_rotated_secret_is_accepted_during_the_grace_and_refused_after(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a hook whose secret was rotated with a one-hour grace
    mind = api.create_mind()
    hook = create_hook(api, mind)
    path = f"/minds/{mind.id}/hooks/{hook.id}/rotate"
    rotated = api.call("POST", path, token=mind.jwt, json_body={"grace_seconds": 3600})
    assert rotated.status == 200, rotated.text
    new_secret = rotated.json()["secret"]
    assert new_secret != hook.secret and rotated.json()["previous_secret_valid_until"]
    # When deliveries are signed with the old, the new, and both secrets during the grace
    for n, secrets in enumerate([[hook.secret], [new_secret], [hook.secret, new_secret]]):
        answer = deliver(api, hook, memory_body(key=f"during_{n}"), secrets=secrets)
        # Then each is accepted
        assert answer.status == 200, answer.text
    # When the grace has passed
    later = clock.now() + timedelta(seconds=3601)
    monkeypatch.setattr(clock, "now", lambda: later)
    at = int(later.timestamp())
    # Then the old secret is refused and stores nothing, and the new one still works
    _refused(deliver(api, hook, memory_body(key="after_old"), secrets=[hook.secret], at=at))
    assert deliver(api, hook, memory_body(key="after_new"), secrets=[new_secret], at=at).status == 200
    keys = sorted(m["key"] for m in stored_memories(dynamo, mind))
    assert keys == ["after_new", "during_0", "during_1", "during_2"]


def test_rotating_without_grace_ends_the_old_secret_at_once(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    path = f"/minds/{mind.id}/hooks/{hook.id}/rotate"
    assert api.call("POST", path, token=mind.jwt, json_body={"grace_seconds": 0}).status == 200
    _refused(deliver(api, hook, memory_body()))
    assert stored_memories(dynamo, mind) == []


def test_deleting_the_mind_removes_its_hooks(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    assert [i for i in scan(dynamo, MINDS) if "HOOK" in i["pk"] + i["sk"]] == []
    _refused(deliver(api, hook, memory_body()))
    assert [i for i in scan(dynamo, MEMORIES) if i["pk"] == mind.id] == []


# ---------------------------------------------------------------- deliveries: idempotency


def test_a_replay_with_the_same_idempotency_key_returns_the_first_answer_and_stores_nothing_twice(
    api: Api, dynamo: Any
) -> None:
    # Given a delivery with an Idempotency-Key that stored two memories
    mind = api.create_mind()
    hook = create_hook(api, mind)
    key = {"Idempotency-Key": "conversation-42"}
    first = deliver(api, hook, batch(2), headers=key)
    assert first.status == 200, first.text
    before = stored_memories(dynamo, mind)
    # When the sender retries it, signed anew a little later
    again = deliver(api, hook, batch(2), headers=key, at=int(time.time()) + 5)
    # Then the answer is the first one, marked as a replay
    assert again.status == 200 and again.json() == first.json()
    assert again.headers.get("Idempotent-Replayed") == "true"
    # And nothing was applied again: same memories, same versions
    assert stored_memories(dynamo, mind) == before
    assert all(m["version"] == 1 for m in before)


def test_a_delivery_cut_short_while_recording_its_answer_is_still_applied_only_once(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.storage import tables

    # Given a delivery with an Idempotency-Key whose invocation dies right after DynamoDB recorded
    # its answer under one of its claims (its signature's) but not yet the other (its key's)
    mind = api.create_mind()
    hook = create_hook(api, mind)
    client = tables.client()
    record = client.update_item

    def dies_after_one_answer(**params: Any) -> Any:
        answered = record(**params)
        if "answer" in params.get("UpdateExpression", ""):
            raise TimeoutError("Task timed out")
        return answered

    monkeypatch.setattr(client, "update_item", dies_after_one_answer)
    key = {"Idempotency-Key": "conversation-43"}
    deliver(api, hook, batch(2), headers=key)  # applied; its answer was a 500 if the death came
    monkeypatch.undo()
    before = stored_memories(dynamo, mind)
    # When the sender retries it, signed anew
    again = deliver(api, hook, batch(2), headers=key, at=int(time.time()) + 5)
    # Then it gets the first answer, and nothing is applied twice
    assert again.status == 200 and again.headers.get("Idempotent-Replayed") == "true", again.text
    assert [m["version"] for m in stored_memories(dynamo, mind)] == [m["version"] for m in before] == [1, 1]


def test_an_exact_replay_without_a_key_is_caught_by_its_signature(api: Api, dynamo: Any) -> None:
    # Given a delivery without Idempotency-Key
    mind = api.create_mind()
    hook = create_hook(api, mind)
    payload = json.dumps(memory_body()).encode()
    header = {
        "content-type": "application/json",
        signing.HEADER: signing.header_value([hook.secret], payload),
    }
    first = api.call("POST", f"/hooks/{hook.id}", raw_body=payload, headers=header)
    # When the same bytes and signature come again, even with an Idempotency-Key added on the way
    replays = [
        api.call("POST", f"/hooks/{hook.id}", raw_body=payload, headers=header),
        api.call(
            "POST", f"/hooks/{hook.id}", raw_body=payload, headers={**header, "Idempotency-Key": "fresh"}
        ),
    ]
    # Then each gets the first answer and the memory stays at version 1
    assert all(r.json() == first.json() for r in replays)
    (memory,) = stored_memories(dynamo, mind)
    assert memory["version"] == 1


def test_an_idempotency_key_reused_for_another_body_is_a_409(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    key = {"Idempotency-Key": "conversation-42"}
    assert deliver(api, hook, memory_body(key="first"), headers=key).status == 200
    assert_error(deliver(api, hook, memory_body(key="second"), headers=key), 409)
    assert [m["key"] for m in stored_memories(dynamo, mind)] == ["first"]


def test_the_same_key_is_applied_again_after_24_hours(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    key = {"Idempotency-Key": "daily"}
    deliver(api, hook, memory_body(), headers=key)
    later = clock.now() + timedelta(hours=24, seconds=1)
    monkeypatch.setattr(clock, "now", lambda: later)
    answer = deliver(api, hook, memory_body(), headers=key, at=int(later.timestamp()))
    assert answer.status == 200 and answer.headers.get("Idempotent-Replayed") is None
    assert answer.json()["results"][0]["status"] == "replaced"


def test_concurrent_retries_apply_a_delivery_once(api: Api, dynamo: Any) -> None:
    # Given one delivery sent by eight threads at once
    mind = api.create_mind()
    hook = create_hook(api, mind)
    body = batch(5)
    answers: list[HttpResponse] = []
    start = threading.Barrier(8)

    def send(n: int) -> None:
        start.wait()
        answers.append(
            deliver(api, hook, body, headers={"Idempotency-Key": "burst"}, at=int(time.time()) + n)
        )

    threads = [threading.Thread(target=send, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then every answer is the first answer (or, had the first taken too long, a 409 "in progress")
    done = [a for a in answers if a.status == 200]
    assert done and all(a.json() == done[0].json() for a in done)
    assert all(a.status == 200 or assert_error(a, 409)["code"] == "in_progress" for a in answers)
    assert sum(a.headers.get("Idempotent-Replayed") != "true" for a in done) == 1
    # And each memory was stored once
    memories = stored_memories(dynamo, mind)
    assert len(memories) == 5 and all(m["version"] == 1 for m in memories)


def test_an_abandoned_claim_is_taken_over_after_its_lease(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a delivery whose first invocation died after claiming (its claim is pending)
    mind = api.create_mind()
    hook = create_hook(api, mind)
    monkeypatch.setattr(batches, "apply_all", lambda *_: (_ for _ in ()).throw(RuntimeError("died")))
    assert deliver(api, hook, memory_body(), headers={"Idempotency-Key": "k"}).status == 500
    monkeypatch.undo()
    # When it is retried within the lease, Then it is "in progress"
    monkeypatch.setattr(idempotency, "WAIT_FOR_FIRST_SECONDS", 0.05)
    assert_error(deliver(api, hook, memory_body(), headers={"Idempotency-Key": "k"}), 409)
    # When it is retried after the lease, Then it is applied
    later = datetime.now(UTC) + timedelta(seconds=idempotency.CLAIM_LEASE_SECONDS + 1)
    monkeypatch.setattr(clock, "now", lambda: later)
    answer = deliver(api, hook, memory_body(), headers={"Idempotency-Key": "k"}, at=int(later.timestamp()))
    assert answer.status == 200 and answer.json()["summary"]["created"] == 1


# ---------------------------------------------------------------- hostile input


HOSTILE_HEADERS = [
    None,
    "",
    "t=",
    "v1=abc",
    "t=abc,v1=abc",
    "t=1" + "0" * 40 + ",v1=00",
    "t=-5,v1=00",
    "t=\uff11\uff12\uff13,v1=00",  # full-width digits: str.isdigit() says yes, int() may too
    "t=123,v1=" + "f" * 10_000,
    ",,,,=,=,",
    "t=1700000000,v1=ü",
    "t=1700000000;v1=abc",
]

HOSTILE_BODIES: list[bytes] = [
    b"",
    b"null",
    b"[]",
    b"[1,2]",
    b"{",
    b'{"memories": null}',
    b'{"memories": [[]]}',
    b'{"memories": [{"category": {"$gt": ""}}]}',
    b'{"category": "fact", "key": "k", "content": "\\ud800"}',
    b'{"a": ' * 40 + b"1" + b"}" * 40,
    b'{"n": 1' + b"0" * 5000 + b"}",
    b'{"x": NaN}',
    b"\xff\xfe\x00",
    json.dumps({"memories": [{"k" * 10_000: 1} for _ in range(100)]}).encode(),
    json.dumps({"memories": [{f"f{i}": i for i in range(500)}]}).encode(),
    json.dumps({"memories": [memory_body(tags=["x" * 70] * 30, confidence=7, expires_at="soon")]}).encode(),
]


@pytest.mark.parametrize("header", HOSTILE_HEADERS)
def test_hostile_signature_headers_are_401_never_500(api: Api, dynamo: Any, header: str | None) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    headers = {"content-type": "application/json"} | ({signing.HEADER: header} if header is not None else {})
    answer = api.call("POST", f"/hooks/{hook.id}", raw_body=b"{}", headers=headers)
    _refused(answer)
    assert stored_memories(dynamo, mind) == []


@pytest.mark.parametrize("body", HOSTILE_BODIES, ids=range(len(HOSTILE_BODIES)))
def test_hostile_signed_bodies_never_give_a_500(api: Api, body: bytes) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    answer = deliver(api, hook, None, raw=body)
    assert answer.status in {200, 400, 413, 415, 422}, answer.text
    if answer.status == 200:
        assert all(r["status"] in {"created", "error"} for r in answer.json()["results"])
        assert len(answer.body) < 200_000


@pytest.mark.parametrize(
    "path_id", ["x", "hook_", "hook_" + "a" * 2000, "hook_ü", "HOOK#x", "hook_aaaaaaaaaaaaaaaaaaaaaa", "%00"]
)
def test_hostile_hook_ids_are_401_never_500(api: Api, path_id: str) -> None:
    answer = deliver(api, path_id, memory_body(), secrets=["whsec_guess"])
    _refused(answer)


@pytest.mark.parametrize(
    "headers",
    [
        {"Idempotency-Key": ""},
        {"Idempotency-Key": "k" * 256},
        {"Idempotency-Key": "with space"},
        {"Idempotency-Key": "ключ"},
        {"content-type": "text/plain"},
    ],
)
def test_hostile_headers_on_a_signed_delivery_never_give_a_500(
    api: Api, dynamo: Any, headers: dict[str, str]
) -> None:
    mind = api.create_mind()
    hook = create_hook(api, mind)
    answer = deliver(api, hook, memory_body(), headers=headers)
    assert answer.status in {400, 415}, answer.text
    assert stored_memories(dynamo, mind) == []


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False, 0, -1, 1e308, 2**63, "", "fact", "user", "agent"])
    if kind == 1:
        return "".join(
            chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x2FFF)])) for _ in range(9)
        )
    if kind == 2:
        return rng.uniform(-2, 2)
    if kind == 3:
        return rng.choice(["fact", "preference", "note"])
    if kind == 4:
        return rng.choice(["k", "Bad Key", "a" * 200, "x_1"])
    if kind == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    names = [
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "confidence",
        "expires_at",
        "source",
        "memories",
    ]
    return {rng.choice(names): _random_json(rng, depth + 1) for _ in range(rng.randrange(6))}


def test_a_seeded_fuzz_of_signed_and_unsigned_deliveries_never_gives_a_500(api: Api) -> None:
    # Given a hook, and a fixed seed so a failure can be replayed
    rng = random.Random(5)
    mind = api.create_mind()
    hook = create_hook(api, mind)
    for n in range(150):
        body = _random_json(rng)
        if rng.random() < 0.4:  # a valid memory with one field made hostile, or left valid
            body = memory_body(key=f"fuzz_{n}")
            body[rng.choice([*body, "tags", "priority", "confidence", "source"])] = _random_json(rng)
        if rng.random() < 0.3:
            body = {"memories": [body, *(_random_json(rng) for _ in range(rng.randrange(5)))]}
        payload = json.dumps(body).encode() if rng.random() < 0.9 else rng.randbytes(rng.randrange(40))
        headers = {"content-type": rng.choice(["application/json", "application/json; charset=utf-8", ""])}
        if rng.random() < 0.7:
            headers[signing.HEADER] = signing.header_value([hook.secret], payload)
        else:
            headers[signing.HEADER] = rng.choice(
                ["", "t=", f"t={int(time.time())},v1=" + rng.randbytes(32).hex()]
            )
        if rng.random() < 0.3:
            headers["Idempotency-Key"] = rng.choice(["k", "k" * 300, "a b", str(rng.random())])
        # When it is delivered, Then the answer is never a server error
        answer = api.call("POST", f"/hooks/{hook.id}", raw_body=payload, headers=headers)
        assert answer.status < 500, (body, headers, answer.text)
