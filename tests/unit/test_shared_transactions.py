"""Packing a batch's writes into shared transactions (`writes.groups`): counters summed, no item
twice in one transaction, never more than DynamoDB's 100 actions."""

from __future__ import annotations

from typing import Any

from synapse.memory import writes


def put(sk: str) -> dict[str, Any]:
    return writes.put({"pk": "m_1", "sk": sk}, "attribute_not_exists(pk)")


def counter(sk: str, **deltas: int) -> dict[str, Any]:
    expression = "ADD " + ", ".join(f"#{f} :{f}" for f in deltas)
    return writes.update({"pk": "m_1", "sk": sk}, expression, deltas, {f"#{f}": f for f in deltas})


def amounts(operation: dict[str, Any]) -> dict[str, int]:
    body = operation["Update"]
    names, values = body["ExpressionAttributeNames"], body["ExpressionAttributeValues"]
    clauses = [clause.split(" ") for clause in body["UpdateExpression"][4:].split(", ")]
    return {names[name]: int(values[value]["N"]) for name, value in clauses}


def test_counters_of_many_writes_are_summed_into_one_action_per_item() -> None:
    # Given three writes that each put their memory and move the same category counter
    planned = [
        (0, [put("MEM#a"), counter("NCAT#fact", n=1, low=1)]),
        (1, [put("MEM#b"), counter("NCAT#fact", n=1)]),
        (2, [put("MEM#c"), counter("NCAT#fact", n=1, low=-1), writes.count_memories("m_1", 1)]),
    ]
    # When they are packed
    (group,) = writes.groups(planned)
    # Then one transaction holds the three puts, one counter update with the sums, one mind count
    assert group.members == [0, 1, 2]
    updates = [op for op in group.ops if "Update" in op]
    assert len(group.ops) == 5 and len(updates) == 2
    by_key = {op["Update"]["Key"]["sk"]["S"]: op for op in updates}
    assert amounts(by_key["NCAT#fact"]) == {"n": 3}  # low moved +1 and -1: left out
    mind = by_key["MIND"]["Update"]
    assert mind["ConditionExpression"] == "attribute_exists(pk)" and amounts(by_key["MIND"]) == {
        "memory_count": 1
    }


def test_an_item_met_twice_starts_the_next_transaction() -> None:
    planned = [(0, [put("MEM#a"), put("REV#1")]), (1, [put("MEM#b")]), (2, [put("MEM#a")])]
    groups = writes.groups(planned)
    assert [g.members for g in groups] == [[0, 1], [2]]


def test_a_counter_with_a_condition_on_values_is_never_summed() -> None:
    # A counter conditioned on its own value (a cap) must see each write's check, not their sum
    capped = writes.update(
        {"pk": "m_1", "sk": "CAP"}, "ADD n :one", {"one": 1, "max": 5}, condition="n < :max"
    )
    groups = writes.groups([(0, [put("MEM#a"), capped]), (1, [put("MEM#b"), capped])])
    assert [g.members for g in groups] == [[0], [1]]
    assert groups[0].ops[1] == capped


def test_transactions_stay_within_a_hundred_actions() -> None:
    planned = [(i, [put(f"MEM#{i}"), put(f"ID#{i}"), counter("NCAT#fact", n=1)]) for i in range(120)]
    groups = writes.groups(planned)
    assert all(len(g.ops) <= writes.MAX_ACTIONS for g in groups)
    assert [m for g in groups for m in g.members] == list(range(120))
    assert sum(amounts(op)["n"] for g in groups for op in g.ops if "Update" in op) == 120


def test_a_write_too_big_for_any_transaction_stays_as_it_is() -> None:
    big = [put(f"TAG#{i}") for i in range(writes.MAX_ACTIONS + 1)]
    groups = writes.groups([(0, [put("MEM#a")]), (1, big), (2, [put("MEM#b")])])
    assert [g.members for g in groups] == [[0], [1], [2]] and groups[1].ops == big
