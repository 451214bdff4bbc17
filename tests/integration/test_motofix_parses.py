"""infra/motofix.py keeps moto's parse of each condition and update expression (a request's is parsed
up to three times): the kept parses answer as moto's own parsing does, the same expression with other
values included, and moto's checks of a request's names still refuse what they refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

from infra import motofix

NAMES = {"#n": "n"}
SET_N = "SET #n = :v"


def _outcome(call: Callable[..., Any], **request: Any) -> str:
    try:
        call(**request)
    except ClientError as error:
        return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
    except ValueError as error:  # moto's parser's own refusal, raised through the mock as it is
        return f"ValueError: {error}"
    return "ok"


def _update(client: Any, pk: str, value: int, below: int) -> str:
    return _outcome(
        client.update_item,
        TableName="things",
        Key={"pk": {"S": pk}},
        UpdateExpression=SET_N,
        ConditionExpression="attribute_not_exists(#n) OR #n < :below",
        ExpressionAttributeNames=NAMES,
        ExpressionAttributeValues={":v": {"N": str(value)}, ":below": {"N": str(below)}},
    )


def _transact(client: Any, expected: int, value: int) -> str:
    check = {"TableName": "things", "Key": {"pk": {"S": "b"}}, "ConditionExpression": "attribute_exists(pk)"}
    update = {
        "TableName": "things",
        "Key": {"pk": {"S": "a"}},
        "UpdateExpression": SET_N,
        "ConditionExpression": "#n = :expected",
        "ExpressionAttributeNames": NAMES,
        "ExpressionAttributeValues": {":v": {"N": str(value)}, ":expected": {"N": str(expected)}},
    }
    return _outcome(
        client.transact_write_items, TransactItems=[{"ConditionCheck": check}, {"Update": update}]
    )


def _script(client: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Writes whose conditions repeat with other values, and requests moto refuses (each twice): every
    outcome, then the table."""
    client.create_table(
        TableName="things",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    new = {"TableName": "things", "ConditionExpression": "attribute_not_exists(pk)"}
    outcomes = [_outcome(client.put_item, Item={"pk": {"S": pk}}, **new) for pk in "aab"]
    named = {"TableName": "things", "ConditionExpression": "attribute_not_exists(#k)"}
    outcomes += [
        _outcome(client.put_item, Item={"pk": {"S": "c"}}, **named, ExpressionAttributeNames={"#k": "pk"})
    ] * 2
    outcomes += [_update(client, "a", value, below) for value, below in ((1, 0), (2, 5), (3, 2), (4, 3))]
    outcomes += [_transact(client, expected, value) for expected, value in ((4, 7), (4, 8), (7, 9), (8, 9))]
    unused = {"#n": "n", "#unused": "x"}
    for _ in range(2):
        outcomes.append(
            _outcome(
                client.update_item,
                TableName="things",
                Key={"pk": {"S": "a"}},
                UpdateExpression=SET_N,
                ExpressionAttributeNames=unused,
                ExpressionAttributeValues={":v": {"N": "1"}},
            )
        )
        outcomes.append(
            _outcome(
                client.put_item,
                TableName="things",
                Item={"pk": {"S": "d"}},
                ConditionExpression="#n <",
                ExpressionAttributeNames=NAMES,
            )
        )
    return outcomes, sorted(client.scan(TableName="things")["Items"], key=lambda item: item["pk"]["S"])


def _run() -> tuple[list[str], list[dict[str, Any]]]:
    with mock_aws():
        return _script(boto3.client("dynamodb", region_name="us-east-1"))


def test_kept_parses_answer_as_motos_own_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given moto with the kept parses, and the same requests answered by moto's own parsing
    motofix.apply()
    kept = _run()
    monkeypatch.setattr(ConditionExpressionParser, "parse", motofix._moto_condition_parse)
    monkeypatch.setattr(UpdateExpressionParser, "make", motofix._moto_update_parse)
    own = _run()
    # Then every outcome and the table are the same
    assert kept == own
    # And the conditions did decide (some writes held, some refused), unused names and a bad
    # expression were refused every time
    outcomes, items = kept
    assert "ok" in outcomes and any(o.startswith("ConditionalCheckFailed") for o in outcomes)
    assert any(o.startswith("TransactionCanceled") for o in outcomes)
    assert sum("#unused" in o for o in outcomes) == 2
    assert outcomes.count("ValueError: Bad comparison #n <") == 2
    assert {item["pk"]["S"]: item.get("n") for item in items} == {"a": {"N": "9"}, "b": None, "c": None}
