"""moto's DynamoDB Query without a sort of the whole table, for the in-process tests.

moto 5.2 answers every Query by sorting all items of the table (`Table.all_items`) with
`DynamoType` comparisons, each of which re-derives both values (`cast_value`), then keeps the
partition asked for: O(n log n) slow comparisons a call, for a partition of a few items. In tests
that fill a mind with a few hundred memories (a thousand items with pointers and tags) that sort was
two thirds of their time (the recall matrix: ~49 million `cast_value` calls).

Three replacements give the same answers, item for item and in the same order:
- a table Query starts from its own partition (`Table.items[hash_key]`): moto kept exactly the
  items whose hash key equals it, then sorted them by range key;
- an index Query starts from the items whose key attributes can match its hash conditions (a
  string or binary value that differs, or an absent one, cannot); moto checks the rest as before,
  then sorts them by the index's keys and the table's, unique per item, so where they start from
  does not change the order;
- a sort (`all_items`, for Scan; `sorted_items`) compares each item's values once derived, not
  re-derived at every comparison; when one attribute holds values of more than one type, it falls
  back to moto's own sort.
Then moto writes each answer out through its generic, shape-driven serializer, which looks every
member of every attribute value up through six alias rules: ~15 calls per member, the other half of
those tests' time. An attribute value that is plain JSON (strings, numbers, sets of them, maps,
lists, booleans, null) is written as the serializer would write it, directly; anything else (binary,
which it encodes, or a value of another kind) still goes through the serializer. And the list of a
response class's methods, which moto makes again for every request, is made once per class.
tests/integration/test_moto_speed.py holds that Query, Scan and the other reads and writes answer
byte for byte as moto's own code does.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from moto.core import responses as moto_responses
from moto.core import utils as moto_utils
from moto.core.serialize import BaseJSONSerializer
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table

# Types whose `cast_value` is the stored value itself, so unequal values mean unequal DynamoTypes.
_EXACT = frozenset({"S", "B"})

_query_of = threading.local()
_applied = False
_moto_query = Table.query
_moto_all_items = Table.all_items
_moto_sorted_items = Table.sorted_items
_query_signature = inspect.signature(_moto_query)
_moto_serialize_structure = BaseJSONSerializer._serialize_type_structure
_moto_method_names = moto_utils.method_names_from_class  # what moto.core.responses imported


def _cannot_match(value: DynamoType | None, wanted: DynamoType) -> bool:
    """Whether moto's `not value or value != wanted` certainly holds, decided without `cast_value`."""
    if value is None or value.type != wanted.type:
        return True
    return value.type in _EXACT and value.value != wanted.value


def _sorted(items: list[Item], values: Callable[[Item], tuple[DynamoType, ...]]) -> list[Item] | None:
    """`items` in the order moto's sort by `values` gives, or None when a position mixes types
    (then only moto's own comparisons say what happens)."""
    keyed = [(values(item), item) for item in items]
    if not keyed:
        return []
    for position in range(len(keyed[0][0])):
        if len({key[position].type for key, _ in keyed}) > 1:
            return None
    keyed.sort(key=lambda pair: tuple(value.cast_value for value in pair[0]))
    return [item for _, item in keyed]


def _candidates(table: Table, arguments: dict[str, Any]) -> list[Item]:
    """The items the Query's own filter will look at: a superset of those it keeps."""
    if not arguments.get("index_name"):
        partition = table.items.get(arguments["hash_key"])
        if partition is None:
            return []
        return list(partition.values()) if table.range_key_attr else [partition]  # type: ignore[list-item]
    conditions = arguments.get("hash_key_conditions") or []
    every = [item for held in table.items.values() for item in _held(table, held)]
    return [item for item in every if not any(_cannot_match(item.attrs.get(n), v) for n, v in conditions)]


def _held(table: Table, held: Any) -> list[Item]:
    return list(held.values()) if table.range_key_attr else [held]


def query(self: Table, *args: Any, **kwargs: Any) -> Any:
    """moto's Query, whose one `all_items` call gets the candidates rather than the sorted table."""
    arguments = _query_signature.bind(self, *args, **kwargs).arguments
    _query_of.table, _query_of.arguments = self, arguments
    try:
        return _moto_query(self, *args, **kwargs)
    finally:
        _query_of.table = _query_of.arguments = None


def all_items(self: Table) -> list[Item]:
    if getattr(_query_of, "table", None) is self:
        arguments = _query_of.arguments
        _query_of.table = _query_of.arguments = None  # the Query's first call only
        return _candidates(self, arguments)
    every = [item for held in self.items.values() for item in _held(self, held)]
    ranged = {item.range_key is not None for item in every}
    if ranged == {True}:
        ordered = _sorted(every, lambda item: (item.hash_key, item.range_key))  # type: ignore[arg-type,return-value]
    elif ranged == {False}:
        ordered = _sorted(every, lambda item: (item.hash_key,))
    else:  # moto's key mixes tuples and values: its own sort says what that gives
        ordered = None
    return _moto_all_items(self) if ordered is None else ordered


def sorted_items(
    self: Table, hash_key_attrs: list[str], range_key_attrs: list[str | None], items: list[Item]
) -> list[Item]:
    names = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
    ordered = _sorted(items, lambda item: tuple(item.attrs[name] for name in names))
    if ordered is None:
        return _moto_sorted_items(self, hash_key_attrs, range_key_attrs, items)
    items[:] = ordered  # moto sorts the list it is given in place and returns it
    return items


class _NotPlain(Exception):
    """An attribute value the serializer would treat otherwise than by copying it."""


_STRINGS = frozenset({"S", "N"})
_STRING_SETS = frozenset({"SS", "NS"})
_BOOLEANS = frozenset({"NULL", "BOOL"})
_MEMBERS = ("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL")  # the shape's order


def _plain(value: Any) -> dict[str, Any]:
    """What moto's JSON serializer makes of the attribute value `value`, or _NotPlain: members in the
    shape's order, None ones left out; strings, booleans and string sets as they are."""
    if type(value) is not dict or not value.keys() <= _KNOWN:
        raise _NotPlain
    written: dict[str, Any] = {}
    for member in _MEMBERS:
        inner = value.get(member)
        if inner is None:
            continue
        if member in _STRINGS and type(inner) is str:
            written[member] = inner
        elif member in _STRING_SETS and type(inner) is list and all(type(one) is str for one in inner):
            written[member] = list(inner)
        elif member == "M" and type(inner) is dict:
            written[member] = {name: _plain(nested) for name, nested in inner.items()}
        elif member == "L" and type(inner) is list:
            written[member] = [_plain(nested) for nested in inner]
        elif member in _BOOLEANS and type(inner) is bool:
            written[member] = inner
        else:  # binary (which the serializer encodes) or a value of another kind
            raise _NotPlain
    return written


_KNOWN = frozenset(_MEMBERS)


def _serialize_type_structure(
    self: BaseJSONSerializer, serialized: Any, value: Any, shape: Any, key: str
) -> None:
    """moto's structure serializer, with attribute values that are plain JSON copied across."""
    if (
        key
        and shape.name == "AttributeValue"
        and not getattr(self._value_picker, "response_transformers", None)
    ):
        try:
            plain = _plain(value)
        except _NotPlain:
            pass
        else:
            self._default_serialize(serialized, plain, shape, key)
            return
    _moto_serialize_structure(self, serialized, value, shape, key)


_method_names: dict[Any, tuple[tuple[int, ...], list[str]]] = {}


def method_names_from_class(clazz: Any) -> list[str]:
    """moto's list of a response class's function names, which it makes again on every request
    (`inspect.getmembers`: a `dir` and a `getattr` of ~100 names, ~7 % of a call): made once per
    class, and again if a class of its MRO gains or loses an attribute."""
    shape = tuple(len(vars(kind)) for kind in clazz.__mro__)
    known = _method_names.get(clazz)
    if known is None or known[0] != shape:
        known = _method_names[clazz] = (shape, _moto_method_names(clazz))
    return list(known[1])


# moto's own methods, for the test that compares the two.
MOTOS_OWN: dict[Any, dict[str, Any]] = {
    Table: {"query": _moto_query, "all_items": _moto_all_items, "sorted_items": _moto_sorted_items},
    BaseJSONSerializer: {"_serialize_type_structure": _moto_serialize_structure},
    moto_responses: {"method_names_from_class": _moto_method_names},
}


def apply() -> None:
    """Patch moto's Table once per process (the patched methods answer as moto's own)."""
    global _applied
    if _applied:
        return
    _applied = True
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    Table.sorted_items = sorted_items  # type: ignore[method-assign]
    BaseJSONSerializer._serialize_type_structure = _serialize_type_structure  # type: ignore[method-assign]
    setattr(moto_responses, "method_names_from_class", method_names_from_class)  # noqa: B010 - not exported
