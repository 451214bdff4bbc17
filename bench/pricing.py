"""DynamoDB's write pricing, applied to item images (what `costs.py` and `scale.py` charge a write).

DynamoDB Local under-reports TransactWriteItems (not every item, no GSI) and moto reports nothing,
so the benches price each changed item from its old and new image by AWS's rules: 1 write unit per
started KB of the larger image; per GSI the item is or was in, 1 per KB of the projection, 2 when
its key changed; x2 inside a transaction (which every memory write is). Whether AWS doubles the GSI
writes of a transaction is not documented either way; doubling them is the conservative reading.
"""

from __future__ import annotations

from typing import Any


def _value_size(value: dict[str, Any]) -> int:
    kind, inner = next(iter(value.items()))
    if kind in {"S", "B"}:
        return len(str(inner).encode())
    if kind == "N":
        return len(str(inner)) // 2 + 2
    if kind in {"BOOL", "NULL"}:
        return 1
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in inner.items())
    return sum(len(str(v)) for v in inner)  # sets


def size(image: dict[str, Any], names: set[str] | None = None) -> int:
    """Bytes of a low-level (typed) image, or of only `names` in it."""
    return sum(len(k.encode()) + _value_size(v) for k, v in image.items() if names is None or k in names)


def units(size_bytes: int) -> int:
    return max(1, -(-size_bytes // 1024))


def gsi_units(old: dict[str, Any] | None, new: dict[str, Any] | None, gsi: dict[str, Any]) -> int:
    keys = [k["AttributeName"] for k in gsi["KeySchema"]]
    projection = gsi["Projection"]
    names = None
    if projection["ProjectionType"] != "ALL":
        names = {"pk", "sk", *keys, *projection.get("NonKeyAttributes", [])}
    inside = [image is not None and all(k in image for k in keys) for image in (old, new)]
    if inside == [True, True] and old is not None and new is not None:
        if all(old[k] == new[k] for k in keys):
            changed = any(old.get(n) != new.get(n) for n in (names or set(old) | set(new)))
            return units(max(size(old, names), size(new, names))) if changed else 0
        return units(size(old, names)) + units(size(new, names))
    pairs = zip((old, new), inside, strict=True)
    return sum(units(size(image, names)) for image, there in pairs if there and image)


def item_write_units(
    old: dict[str, Any] | None, new: dict[str, Any] | None, gsis: list[dict[str, Any]]
) -> int:
    """One item's change: the base table's units and each GSI's (before any transaction factor)."""
    base = units(max(size(old or {}), size(new or {})))
    return base + sum(gsi_units(old, new, gsi) for gsi in gsis)


def stream_write_units(records: list[dict[str, Any]], gsis: list[dict[str, Any]], factor: int) -> float:
    total = 0
    for record in records:
        body = record["dynamodb"]
        total += item_write_units(body.get("OldImage"), body.get("NewImage"), gsis)
    return float(total * factor)
