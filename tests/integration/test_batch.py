"""POST /memory/batch: 1-100 memories, each stored exactly like POST /memory with the caller's
credential, answered with one result per item (the shape of a hook delivery's answer), at most once
per Idempotency-Key."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.memory import keys, store, writes
from synapse.storage import batch_reads, tables

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.races import race
from tests.support.tables import MEMORIES, MINDS, mind_items, scan


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
    summary_fields = {
        "id",
        "category",
        "key",
        "version",
        "verified",
        "created_at",
        "updated_at",
        "occurred_at",
    }
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


def test_an_item_of_content_alone_is_a_note_keyed_as_post_memory_keys_it(api: Api) -> None:
    # Given a note stored with POST /memory from its content alone
    mind = api.create_mind()
    first = api.call("POST", "/memory", json_body={"content": "Likes jazz"}, **as_agent(mind)).json()
    # When a batch holds the same text (spaced otherwise) and a new one, each content alone
    items = [{"content": "likes  JAZZ"}, {"content": "Plays the cello"}]
    answer = send(api, {"memories": items}, as_agent(mind))
    # Then the first replaces that note and the second is a new note, its key derived the same way
    assert answer.json()["summary"] == {"created": 1, "replaced": 1, "proposed": 0, "failed": 0}
    replaced, created = (r["memory"] for r in answer.json()["results"])
    assert (replaced["id"], replaced["key"], replaced["version"]) == (first["id"], first["key"], 2)
    assert (created["category"], created["key"]) == ("note", keys.derived_key("note", "Plays the cello"))


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


# ---------------------------------------------------------------- shared reads and transactions
# A batch is stored with one read and a few shared transactions (`store.store_many`); what it leaves
# must be what the same items sent one after the other with POST /memory leave.


def footprint(dynamo: Any, mind: MindHandle) -> dict[str, Any]:
    """What a mind's writes left, without ids and times: memories, counters, revisions, tag copies."""
    found = scan(dynamo, MEMORIES)
    mine = [item for item in found if item["pk"] == mind.id]
    by_id = {item["id"]: item["key"] for item in mine if item["sk"].startswith("MEM#")}
    mind_item = next(i for i in scan(dynamo, MINDS) if i["pk"] == f"MIND#{mind.id}" and i["sk"] == "MIND")
    fields = ("category", "key", "content", "tags", "priority", "version", "verified", "source")
    return {
        "memories": sorted(tuple(str(i.get(f)) for f in fields) for i in mine if i["sk"].startswith("MEM#")),
        "counters": {
            i["sk"]: (int(i.get("n", 0)), int(i.get("v", 0)), int(i.get("low", 0)))
            for i in mine
            if i["sk"].startswith(("NCAT#", "NTAG#"))
        },
        "revisions": sorted(
            (by_id.get(i["memory"]["id"], "?"), int(i["version"]), i["change"])
            for i in mine
            if i["sk"].startswith("REV#")
        ),
        "proposals": sorted((i["key"], i["status"]) for i in mine if i["sk"].startswith("PROP#")),
        "tag_copies": len([i for i in mine if i["sk"].startswith("TAG#")]),
        "memory_count": int(mind_item.get("memory_count", 0)),
    }


def mixed_items() -> list[dict[str, Any]]:
    """New memories, a key sent three times, an invalid item, a tag and priority change of a stored
    memory, and an agent's rewrite of a verified memory (a proposal)."""
    return [
        memory_body(key="a", content="first a", tags=["x", "y"]),
        memory_body(key="dup", content="dup one", tags=["x"]),
        memory_body(key="b", content="b", priority="low"),
        memory_body(key="dup", content="dup two", tags=["y"], priority="low"),
        memory_body(key="Bad Key", content="invalid"),
        memory_body(key="stored", content="stored, changed", tags=["z"], priority="low"),
        memory_body(key="verified_one", content="an agent's rewrite"),
        memory_body(key="dup", content="dup three", tags=["x", "z"]),
    ]


def seeded_mind(api: Api) -> MindHandle:
    mind = api.create_mind()
    assert api.store(mind, as_agent=True, key="stored", content="stored", tags=["x"]).status == 201
    assert api.store(mind, key="verified_one", content="a person wrote this").status == 201
    return mind


def test_a_batch_leaves_what_the_same_items_stored_one_by_one_leave(api: Api, dynamo: Any) -> None:
    # Given two minds holding the same memories
    one_by_one, batched = seeded_mind(api), seeded_mind(api)
    # When one gets the mixed items with POST /memory each, the other in one batch
    singles = [api.call("POST", "/memory", json_body=item, **as_agent(one_by_one)) for item in mixed_items()]
    answer = send(api, {"memories": mixed_items()}, as_agent(batched)).json()
    # Then each item's status is that of its POST /memory, in order
    expected = {201: "created", 200: "replaced", 202: "proposed", 422: "error"}
    assert [r["status"] for r in answer["results"]] == [expected[s.status] for s in singles]
    assert [r["status"] for r in answer["results"]] == [
        "created", "created", "created", "replaced", "error", "replaced", "proposed", "replaced"
    ]  # fmt: skip
    # And the key sent three times was created, then replaced twice, in the order sent
    dups = [r["memory"] for r in answer["results"] if r.get("memory", {}).get("key") == "dup"]
    assert [m["version"] for m in dups] == [1, 2, 3] and len({m["id"] for m in dups}) == 1
    # And both minds hold the same memories, counters, revisions, proposals and tag copies
    assert footprint(dynamo, batched) == footprint(dynamo, one_by_one)


def test_a_key_sent_twice_in_one_batch_keeps_the_later_item(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    items = [memory_body(key="city", content="Berlin"), memory_body(key="city", content="Hamburg")]
    results = send(api, {"memories": items}, as_agent(mind)).json()["results"]
    assert [(r["status"], r["memory"]["version"]) for r in results] == [("created", 1), ("replaced", 2)]
    stored = api.call("GET", f"/memory/{results[0]['memory']['id']}", **as_agent(mind)).json()
    assert stored["content"] == "Hamburg"
    assert footprint(dynamo, mind)["memory_count"] == 1


def test_a_retried_batch_with_duplicates_is_answered_as_the_first_time(api: Api, dynamo: Any) -> None:
    mind = api.create_mind()
    body = {"memories": [memory_body(key="k", content=str(i)) for i in range(3)]}
    first = send(api, body, as_agent(mind), key="dups-1")
    again = send(api, body, as_agent(mind), key="dups-1")
    assert again.json() == first.json() and again.headers.get("Idempotent-Replayed") == "true"
    assert versions(dynamo, mind) == {"k": 3}


def test_a_batch_too_big_for_one_transaction_is_split_and_counted_exactly(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 10 memories with 20 tags each (22+ actions apiece: over twice one transaction's 100; a
    # hundred such showed nothing more and cost minutes on moto)
    mind = api.create_mind()
    tags = [f"t{i}" for i in range(20)]
    count = 10
    items = [memory_body(key=f"m_{i}", content=f"memory {i}", tags=tags) for i in range(count)]
    sizes: list[int] = []
    real = tables.transact

    def counted(ops: list[dict[str, Any]]) -> None:
        sizes.append(len(ops))
        real(ops)

    monkeypatch.setattr(tables, "transact", counted)
    # When they are sent in one batch
    answer = send(api, {"memories": items}, as_agent(mind)).json()
    # Then all are created, in transactions of at most 100 actions, and every counter is exact
    assert answer["summary"] == {"created": count, "replaced": 0, "proposed": 0, "failed": 0}
    assert len(sizes) > 2 and max(sizes) <= writes.MAX_ACTIONS
    counters = footprint(dynamo, mind)["counters"]
    assert counters["NCAT#fact"] == (count, 0, 0)
    assert all(counters[f"NTAG#{len(t):02d}:{t}#fact"] == (count, 0, 0) for t in tags)
    assert footprint(dynamo, mind)["memory_count"] == count


def test_a_lost_race_inside_a_batch_is_stored_as_one_by_one(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch whose read is followed, before its write, by another writer creating one key
    mind = api.create_mind()
    real = batch_reads.batch_get

    def read_then_race(table: str, keys: Any) -> Any:
        found = real(table, keys)
        monkeypatch.setattr(batch_reads, "batch_get", real)
        assert api.store(mind, as_agent=True, key="fact_3", content="written meanwhile").status == 201
        return found

    monkeypatch.setattr(batch_reads, "batch_get", read_then_race)
    # When the batch is applied
    results = send(api, {"memories": memories(6)}, as_agent(mind)).json()["results"]
    # Then the raced item replaces what the other writer stored, and the others are created
    assert [r["status"] for r in results] == ["created"] * 3 + ["replaced"] + ["created"] * 2
    assert results[3]["memory"]["version"] == 2
    assert versions(dynamo, mind) == {**{f"fact_{i}": 1 for i in range(6)}, "fact_3": 2}
    assert (
        footprint(dynamo, mind)["memory_count"] == 6
        and footprint(dynamo, mind)["counters"]["NCAT#fact"][0] == 6
    )


def test_one_item_failing_to_store_leaves_the_others_stored(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a batch whose shared transaction is cancelled, and whose item 2 then fails on its own
    mind = api.create_mind()
    real_commit, real_store = writes.commit, store.store
    shared = {"failed": False}

    def cancelled_once(ops: Any, mind_op_index: Any = None) -> None:
        if not shared["failed"]:
            shared["failed"] = True
            raise writes.Retry
        real_commit(ops, mind_op_index)

    def failing(mind_id: str, write: Any, *args: Any, **kwargs: Any) -> Any:
        if write.key == "fact_2":
            raise RuntimeError("storage broke")
        return real_store(mind_id, write, *args, **kwargs)

    monkeypatch.setattr(writes, "commit", cancelled_once)
    monkeypatch.setattr(store, "store", failing)
    # When the batch is applied
    body = send(api, {"memories": memories(5)}, as_agent(mind)).json()
    # Then item 2 is an error of ours and the other four are stored, in order
    assert [r["status"] for r in body["results"]] == ["created", "created", "error", "created", "created"]
    assert body["results"][2]["error"]["code"] == "internal_error"
    assert body["summary"] == {"created": 4, "replaced": 0, "proposed": 0, "failed": 1}
    assert set(versions(dynamo, mind)) == {"fact_0", "fact_1", "fact_3", "fact_4"}
    assert footprint(dynamo, mind)["memory_count"] == 4
