"""POST /memory/batch: 1-100 memories, each stored exactly like POST /memory with the caller's
credential, answered with one result per item (the shape of a hook delivery's answer), at most once
per Idempotency-Key."""

from __future__ import annotations

from typing import Any

import pytest

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.races import race
from tests.support.tables import mind_items


def memories(n: int, prefix: str = "fact") -> list[dict[str, Any]]:
    return [memory_body(key=f"{prefix}_{i}", content=f"{prefix} number {i}") for i in range(n)]


def send(api: Api, body: Any, credential: dict[str, Any], key: str | None = None) -> HttpResponse:
    headers = {**credential.get("headers", {}), **({"Idempotency-Key": key} if key else {})}
    return api.call("POST", "/memory/batch", token=credential["token"], json_body=body, headers=headers)


def versions(dynamo: Any, mind: MindHandle) -> dict[str, int]:
    return {item["key"]: int(item["version"]) for item in mind_items(dynamo, mind.id)["memory"]}


def test_a_hundred_items_with_three_invalid_store_ninety_seven_and_name_the_three(
    api: Api, dynamo: Any
) -> None:
    # Given 100 memories of which items 5, 50 and 99 break one rule each
    mind = api.create_mind()
    items = memories(100)
    items[5]["key"] = "Not Snake Case"
    items[50]["priority"] = "urgent"
    del items[99]["content"]
    # When an agent sends them in one batch
    answer = send(api, {"memories": items}, as_agent(mind))
    # Then 97 are stored and the 3 failures name their index and field
    assert answer.status == 200, answer.text
    body = answer.json()
    assert body["summary"] == {"created": 97, "replaced": 0, "proposed": 0, "failed": 3}
    assert [r["index"] for r in body["results"]] == list(range(100))
    failed = {r["index"]: r["error"] for r in body["results"] if r["status"] == "error"}
    fields = {index: error["details"][0]["field"] for index, error in failed.items()}
    assert fields == {5: "key", 50: "priority", 99: "content"}
    assert all(e["code"] == "validation_error" for e in failed.values())
    assert len(versions(dynamo, mind)) == 97
    # And each stored item is summarised as a hook delivery's answer summarises it
    created = body["results"][0]
    assert created["status"] == "created" and created["memory"]["key"] == "fact_0"
    summary_fields = {"id", "category", "key", "version", "verified", "created_at", "updated_at"}
    assert set(created["memory"]) == summary_fields


def test_an_item_stored_again_is_replaced_like_post_memory(api: Api) -> None:
    # Given a memory stored with POST /memory
    mind = api.create_mind()
    first = api.store(mind, as_agent=True, key="home_city", content="Lives in Berlin")
    # When a batch stores the same (category, key)
    again = memory_body(key="home_city", content="Lives in Hamburg")
    answer = send(api, {"memories": [again]}, as_agent(mind))
    # Then it is replaced: same id, version 2
    result = answer.json()["results"][0]
    assert result["status"] == "replaced"
    assert result["memory"]["id"] == first.json()["id"] and result["memory"]["version"] == 2
    assert answer.json()["summary"] == {"created": 0, "replaced": 1, "proposed": 0, "failed": 0}


def test_a_replay_with_the_same_idempotency_key_applies_nothing_twice(api: Api, dynamo: Any) -> None:
    # Given a batch applied with an Idempotency-Key
    mind = api.create_mind()
    body = {"memories": memories(10)}
    first = send(api, body, as_agent(mind), key="import-1")
    assert first.status == 200 and "Idempotent-Replayed" not in first.headers
    before = versions(dynamo, mind)
    # When the same request is sent again (a retry after a lost answer)
    again = send(api, body, as_agent(mind), key="import-1")
    # Then it gets the first answer and nothing is written again
    assert again.status == 200 and again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    assert versions(dynamo, mind) == before and set(before.values()) == {1}
    # And the key with another body is a 409, applying nothing
    other = send(api, {"memories": memories(2, prefix="other")}, as_agent(mind), key="import-1")
    assert_error(other, 409)
    assert versions(dynamo, mind) == before
    # And without a key the same body is applied again (each item replaced)
    plain = send(api, body, as_agent(mind))
    assert plain.json()["summary"] == {"created": 0, "replaced": 10, "proposed": 0, "failed": 0}


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({"memories": []}, "max_items"),
        ({"memories": memories(101)}, "max_items"),
        ({"memories": {"category": "fact"}}, "max_items"),
        ({}, "required"),
    ],
    ids=["empty", "101", "not-a-list", "missing"],
)
def test_a_batch_of_the_wrong_size_or_shape_is_refused_whole(
    api: Api, dynamo: Any, body: dict[str, Any], rule: str
) -> None:
    mind = api.create_mind()
    answer = send(api, body, as_agent(mind))
    assert_error(answer, 422, field="memories", rule=rule)
    assert versions(dynamo, mind) == {}


def test_a_field_beside_memories_is_refused(api: Api) -> None:
    mind = api.create_mind()
    answer = send(api, {"memories": memories(1), "mind_id": "m_other"}, as_agent(mind))
    assert_error(answer, 422, field="mind_id", rule="unknown_field")


def test_a_mind_key_and_a_jwt_both_store_with_their_own_source(api: Api) -> None:
    # Given a mind, its owner's JWT and its Mind Key
    mind = api.create_mind()
    # When each sends a batch
    by_agent = send(api, {"memories": memories(1, prefix="agent")}, as_agent(mind))
    by_user = send(api, {"memories": memories(1, prefix="user")}, as_user(mind))
    # Then both are stored, as agent (unverified) and as user (verified), like POST /memory
    assert by_agent.json()["results"][0]["memory"]["verified"] is False
    assert by_user.json()["results"][0]["memory"]["verified"] is True
    stored = api.call("GET", "/memory", **as_user(mind)).json()["memories"]
    assert {m["key"]: m["source"] for m in stored} == {"agent_0": "agent", "user_0": "user"}


def test_an_item_claiming_another_source_than_the_credential_is_that_items_error(api: Api) -> None:
    mind = api.create_mind()
    items = [memory_body(key="mine"), memory_body(key="claims_user", source="user")]
    results = send(api, {"memories": items}, as_agent(mind)).json()["results"]
    assert [r["status"] for r in results] == ["created", "error"]
    assert results[1]["error"]["code"] == "forbidden"


def test_batches_stay_in_their_own_mind(api: Api, dynamo: Any) -> None:
    # Given two people, each with a mind
    alice, bob = api.create_mind("alice"), api.create_mind("bob")
    # When Alice's agent stores a batch, and Alice names Bob's mind
    mine = send(api, {"memories": memories(3)}, as_agent(alice), key="same-key")
    foreign = send(api, {"memories": memories(3)}, {"token": alice.jwt, "headers": {"X-Mind-Id": bob.id}})
    # Then hers land in her mind and Bob's mind is a 404, untouched
    assert mine.json()["summary"]["created"] == 3
    assert_error(foreign, 404)
    assert len(versions(dynamo, alice)) == 3 and versions(dynamo, bob) == {}
    # And the same Idempotency-Key in Bob's mind is a different key: his batch is applied
    his = send(api, {"memories": memories(3)}, as_agent(bob), key="same-key")
    assert "Idempotent-Replayed" not in his.headers and his.json()["summary"]["created"] == 3


def test_a_malformed_idempotency_key_is_a_400(api: Api) -> None:
    mind = api.create_mind()
    answer = send(api, {"memories": memories(1)}, as_agent(mind), key="x" * 256)
    assert_error(answer, 400, field="Idempotency-Key")


def test_each_item_is_recorded_as_changed_by_the_batchs_credential(api: Api) -> None:
    # Given a memory stored through a batch with the mind's Mind Key
    mind = api.create_mind()
    stored = send(api, {"memories": memories(1)}, as_agent(mind)).json()["results"][0]["memory"]
    # When its history is read
    history = api.call("GET", f"/memory/{stored['id']}/history", **as_agent(mind))
    # Then its revision names the key that wrote it
    assert history.status == 200, history.text
    assert history.json()["revisions"][0]["changed_by"] == {"source": "agent", "key_id": mind.key_id}


def test_an_agents_batch_changing_a_verified_memory_proposes_the_change(api: Api) -> None:
    # Given a memory its owner wrote (verified)
    mind = api.create_mind()
    api.store(mind, key="home_city", content="Lives in Berlin")
    # When an agent's batch changes its content
    changed = memory_body(key="home_city", content="Lives in Hamburg")
    body = send(api, {"memories": [changed]}, as_agent(mind)).json()
    # Then the item is proposed, not applied: the memory keeps its verified content
    result = body["results"][0]
    assert result["status"] == "proposed" and result["proposal"]["status"] == "pending"
    assert body["summary"] == {"created": 0, "replaced": 0, "proposed": 1, "failed": 0}
    current = api.call("GET", f"/memory/{result['memory']['id']}", **as_agent(mind)).json()
    assert current["content"] == "Lives in Berlin" and current["verified"] is True


def test_a_mind_key_without_the_write_scope_may_not_send_a_batch(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    made = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"scopes": ["read"]})
    assert made.status == 201, made.text
    answer = send(api, {"memories": memories(1)}, {"token": made.json()["key"]})
    assert "'write'" in assert_error(answer, 403)["message"]
    assert versions(dynamo, mind) == {}


def test_concurrent_retries_of_a_batch_apply_it_once(api: Api, dynamo: Any) -> None:
    # Given one batch sent by eight threads at once with the same Idempotency-Key
    mind = api.create_mind()
    body = {"memories": memories(5)}
    answers = race(8, lambda _: send(api, body, as_agent(mind), key="burst"))
    # Then one applied it and the others got its answer, or 409 in_progress while it was applied
    done = [a for a in answers if a.status == 200]
    assert done and all(a.json() == done[0].json() for a in done)
    assert all(a.status == 200 or assert_error(a, 409)["code"] == "in_progress" for a in answers)
    assert sum(a.headers.get("Idempotent-Replayed") != "true" for a in done) == 1
    # And each memory was stored once
    assert versions(dynamo, mind) == {f"fact_{i}": 1 for i in range(5)}
