"""Make moto's DynamoDB behave like DynamoDB where our correctness depends on it.

1. DynamoDB applies each request atomically; moto does not lock, so two threads can interleave
   inside one conditional write. We serialise every DynamoDB request behind one lock.
2. moto rolls a failed transaction back by deep-copying every table it touches before each
   transaction (O(table) per write). We evaluate the conditions first and cancel before applying
   anything, as DynamoDB does, so no copy is needed.
3. moto answers GetRecords through its generic, shape-driven serializer: ~4 ms of CPU a stream
   record, 90 % of what indexing a batch cost the local runner (whose stream pump reads every
   item's record: memory, pointer, tags, revision). The records are already DynamoDB JSON, so they
   are written out as JSON directly (the same answer, ~100x cheaper).
4. moto parses a request's condition expression up to three times (its request validation, our
   transaction pre-check of point 2, its backend) and its update expression twice, ~15 % of an
   in-process DynamoDB call. A parse depends only on the expression's text and its attribute names
   and values, and what it makes is never changed afterwards (the update validator works on a deep
   copy), so each parse is kept, keyed by that text: the same answer, parsed once.
All are test/local-stack fixes for the pinned moto version; the service code never imports this.

`table_items` reads an in-process moto table's items for the local runner's snapshot saver, which
used to Scan it through that same serializer: half the runner's CPU while memories arrived.
`InProcessStreams` answers the runner's stream pump in-process likewise: botocore parsing every
record of GetRecords' answer (~0.3 ms of CPU a record, several a memory) was a tenth of what a stored
memory cost the runner, and each poll's requests waited their turn for the server and the GIL.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import types
from collections.abc import Iterator
from typing import Any

from moto.dynamodb import models as dynamo_models
from moto.dynamodb.comparisons import ConditionExpressionParser, get_filter_expression
from moto.dynamodb.exceptions import TransactionCanceledException
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.responses import DynamoHandler
from moto.dynamodbstreams.models import dynamodbstreams_backends
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

_LOCK = threading.RLock()
_applied = False
# Parses kept (point 4); emptied when full, so a long-running runner's memory stays bounded.
_PARSES_KEPT = 4096
_conditions: dict[str, tuple[Any, list[str], list[str]]] = {}
_updates: dict[str, Any] = {}
_moto_condition_parse = ConditionExpressionParser.parse
_moto_update_parse = UpdateExpressionParser.make


def _key_of(backend: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
    if op_type != "Put":
        return dict(op["Key"])
    table = backend.get_table(op["TableName"])
    attrs = op["Item"]
    key = {table.hash_key_attr: attrs[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key[table.range_key_attr] = attrs[table.range_key_attr]
    return key


def _failed_conditions(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    reasons: list[tuple[Any, Any, Any]] = []
    for entry in transact_items:
        op_type, op = next(iter(entry.items()))
        condition = op.get("ConditionExpression")
        if condition is None:
            reasons.append((None, None, None))
            continue
        current = backend.get_item(op["TableName"], _key_of(backend, op_type, op))
        expression = get_filter_expression(
            condition, op.get("ExpressionAttributeNames"), op.get("ExpressionAttributeValues")
        )
        if expression.expr(current):
            reasons.append((None, None, None))
        else:
            reasons.append(("ConditionalCheckFailed", "The conditional request failed", None))
    return reasons


class _NoTableCopy(types.SimpleNamespace):
    """Stands in for the `copy` module inside moto's transaction: tables pass through, items still copy."""

    @staticmethod
    def deepcopy(value: Any) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value)


def _json_value(value: Any) -> Any:
    """What the JSON protocol makes of a value JSON has not: a time as epoch seconds, bytes in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if hasattr(value, "timestamp"):  # ApproximateCreationDateTime, to the millisecond as moto's serializer
        return int(value.timestamp() * 1000) / 1000
    raise TypeError(f"{type(value).__name__} in a stream record")


def _get_records(self: Any) -> str:
    """GetRecords' answer as JSON text: what moto's serializer makes of the same records."""
    limit = self._get_param("Limit")
    result = self.backend.get_records(self._get_param("ShardIterator"), 1000 if limit is None else limit)
    return json.dumps(result, default=_json_value)


def _wire(value: DynamoType) -> dict[str, Any]:
    """One stored attribute value in the JSON protocol's form (binary as base64 text), copied: the
    store may change its sets, lists and maps in place once the lock is let go."""
    kind, inner = value.type, value.value
    if kind == "M":
        return {kind: {name: _wire(nested) for name, nested in inner.items()}}
    if kind == "L":
        return {kind: [_wire(nested) for nested in inner]}
    if kind == "B":
        return {kind: _base64(inner)}
    if kind == "BS":
        return {kind: [_base64(member) for member in inner]}
    if kind in ("SS", "NS"):
        return {kind: list(inner)}
    return {kind: inner}


def _base64(value: bytes | str) -> str:
    return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value


def _table(name: str) -> Table:
    for regions in list(dynamo_models.dynamodb_backends.values()):
        for backend in list(regions.values()):
            if name in backend.tables:
                return backend.tables[name]
    raise LookupError(f"no moto table {name!r} in this process")


def table_items(name: str, chunk: int = 1000) -> Iterator[dict[str, Any]]:
    """Every item of the in-process moto table `name`, as a consistent Scan would return it in the
    JSON protocol (binary as base64), without a request or moto's serializer. Read `chunk` items at
    a time under the store's lock, so requests wait for one chunk at most; each item is read whole
    (consistent per item, as a Scan is)."""
    with _LOCK:
        table = _table(name)
        stored = [item for hashed in list(table.items.values()) for item in _items_of(table, hashed)]
    for start in range(0, len(stored), chunk):
        with _LOCK:
            copied = [{k: _wire(v) for k, v in item.attrs.items()} for item in stored[start : start + chunk]]
        yield from copied


def _items_of(table: Table, hashed: Any) -> list[Any]:
    return list(hashed.values()) if table.range_key_attr else [hashed]


class InProcessStreams:
    """The DynamoDB Streams calls the local stream pump makes, answered by the in-process moto with
    what its endpoint answers (through `_get_records`' JSON), without a request and botocore's parsing
    of it: records come as Lambda hands them to a function (binary as base64 text, times as numbers).
    """

    def _backend(self, arn: str) -> Any:
        _, _, _, region, account, _ = arn.split(":", 5)
        return dynamodbstreams_backends[account][region]

    def _answer(self, result: Any) -> Any:
        return json.loads(json.dumps(result, default=_json_value))  # a copy: moto's may change later

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:
        with _LOCK:
            return {"StreamDescription": self._answer(self._backend(StreamArn).describe_stream(StreamArn))}

    def get_shard_iterator(
        self,
        StreamArn: str,
        ShardId: str,
        ShardIteratorType: str,
        SequenceNumber: str | None = None,
    ) -> dict[str, Any]:
        backend = self._backend(StreamArn)
        sequence = None if SequenceNumber is None else int(SequenceNumber)
        with _LOCK:
            iterator = backend.get_shard_iterator(StreamArn, ShardId, ShardIteratorType, sequence)
            return {"ShardIterator": iterator.arn}

    def get_records(self, ShardIterator: str, Limit: int = 1000) -> dict[str, Any]:
        backend = self._backend(ShardIterator.split("/stream/", 1)[0])
        with _LOCK:
            answer: dict[str, Any] = self._answer(backend.get_records(ShardIterator, Limit))
        backend.shard_iterators.pop(ShardIterator, None)  # moto keeps every iterator it hands out
        return answer


def _parse_condition(self: ConditionExpressionParser) -> Any:
    """moto's `ConditionExpressionParser.parse`, once per expression, names and values: the tree it
    makes holds its own copy of the values (parsed from the key) and no state of an evaluation."""
    try:
        key = json.dumps(
            [self.condition_expression, self.expression_attribute_names, self.expression_attribute_values]
        )
    except TypeError:  # a value JSON has not (bytes): parsed as moto does
        return _moto_condition_parse(self)
    kept = _conditions.get(key)
    if kept is None:
        fresh = ConditionExpressionParser(*json.loads(key))
        kept = (_moto_condition_parse(fresh), fresh.expr_attr_names_found, fresh.expr_attr_values_found)
        if len(_conditions) >= _PARSES_KEPT:
            _conditions.clear()
        _conditions[key] = kept
    op, names, values = kept
    self.expr_attr_names_found.extend(names)
    self.expr_attr_values_found.extend(values)
    return op


def _parse_update(cls: Any, expression: str) -> Any:
    """moto's `UpdateExpressionParser.make`, once per expression text: its readers only look for
    clauses, and its validator works on a deep copy."""
    kept = _updates.get(expression)
    if kept is None:
        kept = _moto_update_parse(expression)
        if len(_updates) >= _PARSES_KEPT:
            _updates.clear()
        _updates[expression] = kept
    return kept


def apply() -> None:
    global _applied
    if _applied:
        return
    _applied = True

    original_call = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with _LOCK:
            return original_call(self)

    original_transact = dynamo_models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _LOCK:
            reasons = _failed_conditions(self, transact_items)
            if any(code for code, _, _ in reasons):
                raise TransactionCanceledException(reasons)
            real_copy = dynamo_models.copy  # type: ignore[attr-defined]
            dynamo_models.copy = _NoTableCopy()  # type: ignore[attr-defined,assignment]
            try:
                original_transact(self, transact_items)
            finally:
                dynamo_models.copy = real_copy  # type: ignore[attr-defined]

    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    ConditionExpressionParser.parse = _parse_condition  # type: ignore[method-assign]
    UpdateExpressionParser.make = classmethod(_parse_update)
    DynamoDBStreamsHandler.get_records = _get_records  # type: ignore[method-assign,assignment]
    dynamo_models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
