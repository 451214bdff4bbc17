"""The tests' faster moto (tests/support/moto_speed.py) answers as moto's own code: Query and Scan
give the same items, counts and LastEvaluatedKey in the same order, page after page, and every
answer (those reads, and the other reads and writes) is the same text, byte for byte."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.support import moto_speed

KEYS = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
ALL = {"ProjectionType": "ALL"}


def _tables(client: Any) -> None:
    """A table keyed like the memories table, with a global index with and one without a range key
    and a local one (numbers for keys), and a table without a range key, keyed by a number."""
    client.create_table(
        TableName="things",
        KeySchema=KEYS,
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in (("pk", "S"), ("sk", "S"), ("group", "S"), ("rank", "N"), ("n", "N"))
        ],
        GlobalSecondaryIndexes=[
            {"IndexName": "by_group", "KeySchema": _keys("group", "rank"), "Projection": ALL},
            {"IndexName": "by_n", "KeySchema": _keys("n"), "Projection": {"ProjectionType": "KEYS_ONLY"}},
        ],
        LocalSecondaryIndexes=[{"IndexName": "by_rank", "KeySchema": _keys("pk", "rank"), "Projection": ALL}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.create_table(
        TableName="flat",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _keys(hash_name: str, range_name: str | None = None) -> list[dict[str, str]]:
    keys = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    return keys + ([{"AttributeName": range_name, "KeyType": "RANGE"}] if range_name else [])


def _fill(client: Any, seed: int) -> None:
    """Items over a few partitions and groups, some without the index keys, numbers written in more
    than one way ("2", "2.0", "-0.5") so equal numbers of different spellings meet."""
    rng = random.Random(seed)
    numbers = ["0", "1", "1.0", "2", "2.50", "-0.5", "10", "-3", "7e1"]
    puts: dict[str, list[dict[str, Any]]] = {"things": [], "flat": []}
    for i in range(150):
        item: dict[str, Any] = {
            "pk": {"S": f"p{rng.randrange(5)}"},
            "sk": {"S": f"{rng.choice('ABab#')}{rng.randrange(1000):03d}"},
            "body": {
                "M": {"i": {"N": str(i)}, "l": {"L": [{"S": "x"}, {"BOOL": i % 2 == 0}, {"NULL": True}]}}
            },
            "sets": {"M": {"s": {"SS": ["b", "a", ""]}, "n": {"NS": ["2", "1.5"]}, "e": {"S": ""}}},
        }
        if i % 7 == 0:
            item["blob"] = {"B": bytes([i % 256, 0, 255])}
            item["blobs"] = {"L": [{"BS": [b"x", bytes([i % 256])]}, {"M": {"b": {"B": b"\x00"}}}]}
        if rng.random() < 0.8:
            item["group"] = {"S": rng.choice(["g1", "g2", "G1", "g10"])}
        if rng.random() < 0.7:
            item["rank"] = {"N": rng.choice(numbers)}
        if rng.random() < 0.6:
            item["n"] = {"N": rng.choice(numbers)}
        flat_id = rng.choice([str(i), f"{i}.00", f"-{i}", f"{i}e-2"])
        puts["things"].append(item)
        puts["flat"].append({"id": {"N": flat_id}, "i": {"N": str(i)}})
    for table, items in puts.items():
        for start in range(0, len(items), 25):
            batch = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
            assert not client.batch_write_item(RequestItems={table: batch}).get("UnprocessedItems")


def _pages(call: Any, **request: Any) -> Iterator[dict[str, Any]]:
    """Every page of a Query or Scan; a walk that never ends (a wrong order of items can restart
    it) is cut short, so a difference shows as one rather than as a hang."""
    for _ in range(200):
        answer = call(**request)
        answer.pop("ResponseMetadata", None)
        yield answer
        if "LastEvaluatedKey" not in answer:
            return
        request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    yield {"cut short": request}


def _query(condition: str, **spec: Any) -> tuple[str, dict[str, Any]]:
    """A Query; `v_name` arguments are its values (`:name`), the rest its parameters."""
    parameters = {name: value for name, value in spec.items() if not name.startswith("v_")}
    values = {f":{name[2:]}": value for name, value in spec.items() if name.startswith("v_")}
    return "query", {"KeyConditionExpression": condition, **parameters, **values}


def _requests() -> Iterator[tuple[str, dict[str, Any]]]:
    """Queries of every kind (table, local and global index, range conditions, both directions,
    filters, pages) and Scans, of the table and its indexes."""
    for pk in ("p0", "p3", "nobody"):
        for forward in (True, False):
            yield _query("pk = :pk", v_pk=pk, ScanIndexForward=forward, Limit=7)
            yield _query("pk = :pk", v_pk=pk, ScanIndexForward=forward)
        yield _query("pk = :pk AND begins_with(sk, :a)", v_pk=pk, v_a="a", Limit=4)
        yield _query("pk = :pk AND sk BETWEEN :a AND :b", v_pk=pk, v_a="A", v_b="a5")
        yield _query("pk = :pk", v_pk=pk, FilterExpression="attribute_exists(#r)")
        yield _query("pk = :pk", v_pk=pk, IndexName="by_rank", Limit=5)
        yield _query("pk = :pk AND #r > :z", v_pk=pk, v_z="0.5", IndexName="by_rank")
    for group in ("g1", "G1", "g10", "none"):
        yield _query("#g = :g", v_g=group, IndexName="by_group", Limit=6)
        between = "#g = :g AND #r BETWEEN :lo AND :hi"
        yield _query(between, v_g=group, v_lo="-1", v_hi="2.5", IndexName="by_group", ScanIndexForward=False)
    for n in ("1", "1.00", "2.5", "70", "3"):
        yield _query("n = :n", v_n=n, IndexName="by_n", Limit=3)
    yield "scan", {"Limit": 13}
    yield "scan", {"FilterExpression": "attribute_not_exists(#g)"}
    yield "scan", {"IndexName": "by_group", "Limit": 11}
    yield "scan_flat", {"Limit": 9}


def _writes_and_reads(client: Any) -> list[dict[str, Any]]:
    """The other calls the service makes, answering with items: single and batch reads, writes
    that return what they replaced or made, a transaction's reads, and a refused condition."""
    key = {"pk": {"S": "p1"}, "sk": {"S": "new"}}
    item = {**key, "m": {"M": {"x": {"L": [{"N": "1"}, {"B": b"y"}]}}}, "t": {"BOOL": False}}
    answers = [
        client.put_item(TableName="things", Item=item, ReturnValues="ALL_OLD"),
        client.put_item(TableName="things", Item={**item, "t": {"BOOL": True}}, ReturnValues="ALL_OLD"),
        client.update_item(
            TableName="things",
            Key=key,
            UpdateExpression="SET #c = :c, #s = :s ADD #n :one",
            ExpressionAttributeNames={"#c": "c", "#s": "ss", "#n": "n"},
            ExpressionAttributeValues={":c": {"S": "ü"}, ":s": {"SS": ["q"]}, ":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        ),
        client.get_item(TableName="things", Key=key, ConsistentRead=True),
        client.transact_get_items(TransactItems=[{"Get": {"TableName": "things", "Key": key}}]),
    ]
    everything = client.scan(TableName="things", Limit=60)["Items"]
    keys = [{"pk": one["pk"], "sk": one["sk"]} for one in everything]
    answers.append(client.batch_get_item(RequestItems={"things": {"Keys": keys[:40]}}))
    try:
        client.put_item(
            TableName="things",
            Item=item,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except client.exceptions.ConditionalCheckFailedException as refused:
        answers.append(refused.response)
    answers.append(client.delete_item(TableName="things", Key=key, ReturnValues="ALL_OLD"))
    for answer in answers:
        answer.pop("ResponseMetadata", None)
    return answers


def _answers(client: Any) -> list[Any]:
    found: list[Any] = []
    for kind, spec in _requests():
        request: dict[str, Any] = {"TableName": "flat" if kind == "scan_flat" else "things"}
        values = {}
        for name, value in spec.items():
            if name.startswith(":"):
                values[name] = {"N": value} if name in (":z", ":lo", ":hi", ":n") else {"S": value}
            else:
                request[name] = value
        if values:
            request["ExpressionAttributeValues"] = values
        text = " ".join(str(v) for v in request.values())
        names = {f"#{a[0]}": a for a in ("group", "rank") if f"#{a[0]}" in text}
        if names:
            request["ExpressionAttributeNames"] = names
        call = client.query if kind == "query" else client.scan
        found.append(list(_pages(call, **request)))
    return found + _writes_and_reads(client)


def _run(seed: int) -> tuple[list[Any], list[bytes]]:
    """Every answer of the calls above, as the client parsed it and as moto wrote it."""
    bodies: list[bytes] = []
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        client = boto3.client("dynamodb", region_name="us-east-1")
        _tables(client)  # (their descriptions hold the time and ids of their making)
        client.meta.events.register(
            "after-call.dynamodb", lambda http_response, **_: bodies.append(http_response.content)
        )
        _fill(client, seed)
        return _answers(client), bodies


def test_query_and_scan_answer_as_motos_own_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the tests' moto, and moto's own methods put back for a second pass over the same items
    moto_speed.apply()
    fast = _run(seed=1)
    for patched, methods in moto_speed.MOTOS_OWN.items():
        for name, method in methods.items():
            monkeypatch.setattr(patched, name, method)
    # When the same queries and scans are made page by page, and the other reads and writes
    slow = _run(seed=1)
    # Then every answer is the same text, every page the same items in the same order, and the
    # requests found items, binary ones among them
    assert fast[1] == slow[1]
    assert fast[0] == slow[0]
    assert sum(page["Count"] for pages in fast[0][:-8] for page in pages) > 500
    assert b'"B": ' in b"".join(fast[1]) and b'"BS": ' in b"".join(fast[1])
