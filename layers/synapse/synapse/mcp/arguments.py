"""A tool call's arguments checked against the tool's input schema (the subset `schema` uses: type,
required, additionalProperties false, enum, string and array lengths, number ranges, pattern).

An unknown or mistyped argument is refused naming it, never ignored; Synapse's own rules (content
size, key pattern, tag limits…) run after, in the same validation the REST bodies use.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class BadArguments(ValueError):
    """Arguments that do not fit the tool's schema; the message names the argument."""


def _is(value: Any, wanted: str) -> bool:
    if isinstance(value, bool) and wanted in {"integer", "number"}:
        return False
    return isinstance(value, _TYPES[wanted])


def _check_type(value: Any, rule: dict[str, Any], path: str) -> None:
    wanted = rule.get("type")
    if wanted is None:
        return
    kinds = wanted if isinstance(wanted, list) else [wanted]
    if not any(_is(value, kind) for kind in kinds):
        raise BadArguments(f"{path}: must be {' or '.join(kinds)}")


def _check_bounds(value: Any, rule: dict[str, Any], path: str) -> None:
    if "enum" in rule and value not in rule["enum"]:
        raise BadArguments(f"{path}: must be one of {', '.join(map(str, rule['enum']))}")
    if isinstance(value, str):
        if len(value) < rule.get("minLength", 0):
            raise BadArguments(f"{path}: must not be empty")
        if "maxLength" in rule and len(value) > rule["maxLength"]:
            raise BadArguments(f"{path}: must be at most {rule['maxLength']} characters")
        if "pattern" in rule and not re.fullmatch(rule["pattern"], value):
            raise BadArguments(f"{path}: must match {rule['pattern']}")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and (value < rule.get("minimum", value) or value > rule.get("maximum", value)):
        raise BadArguments(f"{path}: must be from {rule.get('minimum')} to {rule.get('maximum')}")
    size = len(value) if isinstance(value, list) else None
    if size is not None and not rule.get("minItems", 0) <= size <= rule.get("maxItems", size):
        raise BadArguments(f"{path}: must hold {rule.get('minItems', 0)}-{rule.get('maxItems')} items")


def check(value: Any, rule: dict[str, Any], path: str) -> None:
    """Raise BadArguments naming the first argument (a dotted path) that breaks its rule."""
    _check_type(value, rule, path)
    _check_bounds(value, rule, path)
    if isinstance(value, list) and "items" in rule:
        for index, item in enumerate(value):
            check(item, rule["items"], f"{path}[{index}]")
    if isinstance(value, dict) and "properties" in rule:
        _check_object(value, rule, path)


def _check_object(value: dict[str, Any], rule: dict[str, Any], path: str) -> None:
    prefix = f"{path}." if path else ""
    properties = rule["properties"]
    if rule.get("additionalProperties") is False:
        unknown = sorted(set(value) - set(properties))
        if unknown:
            known = ", ".join(properties)
            raise BadArguments(f"{prefix}{unknown[0][:80]}: not an argument of this tool (it takes {known})")
    for name in rule.get("required", []):
        if name not in value:
            raise BadArguments(f"{prefix}{name}: is required")
    for name, item in value.items():
        check(item, properties[name], f"{prefix}{name}")


def checked(arguments: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a tools/call (absent means none), checked against the tool's input schema."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise BadArguments("arguments: must be an object")
    check(arguments, schema, "")
    return arguments
