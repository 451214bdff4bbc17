"""Request bodies: each field declared once with its rule, validated strictly over parsed JSON, and
described as JSON Schema for the OpenAPI document from the same declaration.

Not pydantic: importing it costs ~0.3 x `import boto3`, and a handler's cold start is held to
1.3 x (issue 14), while the rules here are few: a JSON type, allowed strings, a numeric range, a
list's items and length, a default, and one check function per field for the rest. Strict: no type
is coerced (a number is not a string, `true` is not 1; only 2.0, which JSON and JSON Schema count as
the whole number 2, is taken as 2) and an unknown field is refused. Every broken rule becomes a
detail naming the field (`tags[2]` for an item), and the whole is one 422.
"""

import inspect
import re
from collections.abc import Callable
from dataclasses import MISSING
from enum import StrEnum
from typing import Any, ClassVar, Literal, NamedTuple, Self, dataclass_transform

from synapse.core.errors import Unprocessable

JsonType = Literal["string", "integer", "number", "boolean", "array"]


class Invalid(ValueError):
    """A value breaks a rule: `rule` names it for machines, `message` says it for people."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


class Broken(Exception):
    """One or more fields broke their rules: the 422's details."""

    def __init__(self, details: list[dict[str, str]]) -> None:
        super().__init__(details)
        self.details = details


def detail(field: str, rule: str, message: str) -> dict[str, str]:
    return {"field": field, "rule": rule, "message": message}


_JSON_NAMES = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
_WANTED = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
}


def _json_name(value: Any) -> str:
    return "null" if value is None else _JSON_NAMES.get(type(value), "an object")


class Rule(NamedTuple):
    """What a value must be. `choices` (a StrEnum, whose member the value becomes, or a tuple of
    strings) replaces the type check; `check` runs last and may return the value normalised;
    `schema` holds the JSON Schema keywords that state what `check` enforces."""

    json_type: JsonType = "string"
    choices: type[StrEnum] | tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    items: "Rule | None" = None
    min_items: int | None = None
    check: Callable[[Any], Any] | None = None
    schema: dict[str, Any] = {}  # noqa: RUF012  (read, never changed)

    def accept(self, value: Any, path: str) -> Any:
        """The value as the body will hold it, or `Broken` naming `path`."""
        value = self._typed(value, path)
        if self.check is None:
            return value
        try:
            return self.check(value)
        except Invalid as invalid:
            raise Broken([detail(path, invalid.rule, invalid.message)]) from None

    def _typed(self, value: Any, path: str) -> Any:
        if self.choices is not None:
            allowed = [str(choice) for choice in self.choices]
            if not isinstance(value, str) or value not in allowed:
                raise Broken([detail(path, "enum", f"must be one of: {', '.join(allowed)}")])
            return self.choices(value) if isinstance(self.choices, type) else value
        if self.json_type == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON has one kind of number: 2.0 is the whole number 2 (JSON Schema too)
        if not _is_json_type(value, self.json_type):
            message = f"must be {_WANTED[self.json_type]}, not {_json_name(value)}"
            raise Broken([detail(path, "type", message)])
        if self.json_type in ("integer", "number"):
            return self._in_range(value, path)
        if self.json_type == "array":
            return self._items(value, path)
        return value

    def _in_range(self, value: float, path: str) -> float:
        low, high = self.minimum, self.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            if low is not None and high is not None:
                bounds = f"between {low:g} and {high:g}"
            else:
                bounds = f"at least {low:g}" if low is not None else f"at most {high:g}"
            raise Broken([detail(path, "range", f"must be {bounds} (got {_number(value)})")])
        if self.json_type != "number":
            return value
        try:  # a JSON integer has no bound: 1 followed by 400 zeros is no float
            return float(value)
        except OverflowError:
            raise Broken([detail(path, "range", "must be a finite number")]) from None

    def _items(self, values: list[Any], path: str) -> list[Any]:
        if self.min_items is not None and len(values) < self.min_items:
            raise Broken([detail(path, "too_short", f"must hold at least {self.min_items} item")])
        if self.items is None:
            return values
        accepted, details = [], []
        for index, value in enumerate(values):
            try:
                accepted.append(self.items.accept(value, f"{path}[{index}]"))
            except Broken as broken:
                details += broken.details
        if details:
            raise Broken(details)
        return accepted


def _number(value: float) -> str:
    """A number for a message: `g` form, or words for an integer too large for a float."""
    try:
        return f"{value:g}"
    except OverflowError:
        return "a number past 1e308"


def _is_json_type(value: Any, wanted: JsonType) -> bool:
    if isinstance(value, bool):
        return wanted == "boolean"
    return isinstance(value, _PYTHON_TYPES[wanted])


_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
}


class _Field(NamedTuple):
    rule: Rule
    required: bool
    nullable: bool
    default: Any  # MISSING when required or made by `factory`
    factory: Callable[[], Any] | None


def accepts(
    rule: Rule,
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | None = None,
    nullable: bool | None = None,
) -> Any:
    """A body field holding `rule`. Without a default it is required. Null is accepted (as "not
    given") when the default is None, unless `nullable=False`: then a field may be left out but not
    sent as null (a PATCH field that null would not clear)."""
    required = default is MISSING and default_factory is None
    nullable = default is None if nullable is None else nullable
    return _Field(rule, required, nullable, default, default_factory)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(accepts,))
class Body:
    """A request body. Subclasses declare fields with `accepts`; `from_body` builds one or raises
    a 422; `sent` tells which fields the client sent (a PATCH changes only those).

    Read-only, like a frozen dataclass, but not made by `dataclass`: generating its methods cost
    ~0.5 ms a class on every cold start, and a body handler imports several (issue 14)."""

    declared: ClassVar[dict[str, _Field]] = {}
    described: ClassVar[str] = ""  # the class's own docstring, for the OpenAPI document
    # Set, a body that gives no field a value (each left out or null) is a 422 with this message,
    # and the schema says so (`anyOf`): a PATCH that would change nothing.
    nothing_given: ClassVar[str] = ""
    sent: frozenset[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.described = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
        own = {name: value for name, value in vars(cls).items() if isinstance(value, _Field)}
        for name in own:
            delattr(cls, name)  # an instance holds the value; the class keeps it in `declared`
        cls.declared = {**cls.declared, **own}

    def __init__(self, **values: Any) -> None:
        """Values already validated (`from_body`); a field left out takes its default."""
        unknown = set(values) - set(self.declared)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        for name, field in self.declared.items():
            if name in values:
                value = values[name]
            elif field.factory is not None:
                value = field.factory()
            elif field.default is not MISSING:
                value = field.default
            else:
                raise TypeError(f"{type(self).__name__} needs {name!r}")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "sent", frozenset(values))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.declared)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Self:
        """The validated body, or a 422 naming every field that broke a rule."""
        values: dict[str, Any] = {}
        details: list[dict[str, str]] = []
        for name, declared in cls.declared.items():
            if name not in body:
                if declared.required:
                    details.append(detail(name, "required", "is required"))
            elif body[name] is None and (declared.nullable or not declared.required):
                if not declared.nullable:
                    details.append(detail(name, "not_null", "cannot be null; leave the field out instead"))
                values[name] = None
            else:
                try:
                    values[name] = declared.rule.accept(body[name], name)
                except Broken as broken:
                    details += broken.details
        for name in body:
            if name not in cls.declared:
                details.append(detail(name, "unknown_field", "is not a field this endpoint accepts"))
        if not details and cls.nothing_given and all(value is None for value in values.values()):
            details.append(detail("body", "required", cls.nothing_given))
        if not details:
            made = cls(**values)
            try:
                made.check_whole()
                return made
            except Invalid as invalid:
                details.append(detail("body", invalid.rule, invalid.message))
        raise Unprocessable("; ".join(f"{d['field']}: {d['message']}" for d in details), details=details)

    def check_whole(self) -> None:
        """A rule on the fields together (after each passed its own); raises `Invalid`."""


# ---------------------------------------------------------------- described (OpenAPI)


def json_schema(body: type[Body], ref: Callable[[type[StrEnum]], str]) -> dict[str, Any]:
    """The JSON Schema of what `body.from_body` accepts; `ref` names an enum's shared schema."""
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if body.described:
        schema["description"] = body.described
    schema["properties"] = {name: _property(field, ref) for name, field in body.declared.items()}
    required = [name for name, field in body.declared.items() if field.required]
    if required:
        schema["required"] = required
    if body.nothing_given:  # some field must be there, and not null
        given = [
            {"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in body.declared
        ]
        schema |= {"minProperties": 1, "anyOf": given}
    return schema


def _property(field: _Field, ref: Callable[[type[StrEnum]], str]) -> dict[str, Any]:
    value = _value_schema(field.rule, ref)
    if not field.nullable:
        if field.default not in (MISSING, None):
            value["default"] = field.default
        return value
    described = {"description": value.pop("description")} if "description" in value else {}
    return {"anyOf": [value, {"type": "null"}], "default": None, **described}


def _value_schema(rule: Rule, ref: Callable[[type[StrEnum]], str]) -> dict[str, Any]:
    if isinstance(rule.choices, type):
        return {"$ref": ref(rule.choices)}
    if rule.choices is not None:
        return {"type": "string", "enum": list(rule.choices)}
    found: dict[str, Any] = {"type": rule.json_type}
    bounds = {"minimum": rule.minimum, "maximum": rule.maximum, "minItems": rule.min_items}
    found |= {keyword: bound for keyword, bound in bounds.items() if bound is not None}
    if rule.items is not None:
        found["items"] = _value_schema(rule.items, ref)
    return found | rule.schema


# ---------------------------------------------------------------- text rules bodies share

# What `str.strip()` removes (every character `str.isspace()` names; a unit test keeps them equal),
# spelled out so that the OpenAPI pattern means the same in any regex dialect, and the control
# characters (C0 and DEL) a tag, a mind's name or a label may not hold once trimmed.
SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
CONTROL = r"\x00-\x1f\x7f"
_HAS_CONTROL = re.compile(f"[{CONTROL}]")


def has_control_characters(text: str) -> bool:
    return _HAS_CONTROL.search(text) is not None


def trimmed_text(value: str, max_chars: int) -> str:
    """`value` without its surrounding whitespace, which must be 1 to `max_chars` characters and
    hold no control character; else `Invalid`."""
    value = value.strip()
    if not 1 <= len(value) <= max_chars:
        raise Invalid("length", f"must be 1-{max_chars} characters")
    if has_control_characters(value):
        raise Invalid("characters", "must not contain control characters")
    return value


def trimmed_text_pattern(max_chars: int) -> str:
    """The JSON Schema pattern of exactly the strings `trimmed_text(value, max_chars)` accepts:
    any surrounding whitespace, then 1 to `max_chars` characters that start and end with neither
    whitespace nor a control character and hold no control character between."""
    edge = f"[^{SPACE}{CONTROL}]"
    middle = f"(?:[^{CONTROL}]{{0,{max_chars - 2}}}{edge})?" if max_chars > 1 else ""
    return f"^[{SPACE}]*{edge}{middle}[{SPACE}]*$"


def whole_numbers_pattern(high: int) -> str:
    """A regex (no anchors) for the whole numbers 1 to `high` written without leading zeros, so a
    pattern can state a bound on a number inside a string (a duration, a port)."""
    digits = str(high)

    def any_digits(count: str) -> str:
        return "" if count in ("0", "0,0") else "[0-9]" if count == "1" else f"[0-9]{{{count}}}"

    shorter = [f"[1-9]{any_digits(f'0,{len(digits) - 2}')}"] if len(digits) > 1 else []
    same_length = []  # a prefix of `high`, a smaller digit, then any digits
    for i, digit in enumerate(digits):
        lowest = 1 if i == 0 else 0
        if int(digit) > lowest:
            smaller = f"[{lowest}-{int(digit) - 1}]" if int(digit) - 1 > lowest else str(lowest)
            same_length.append(digits[:i] + smaller + any_digits(str(len(digits) - i - 1)))
    return "(?:" + "|".join([*shorter, *same_length, digits]) + ")"
