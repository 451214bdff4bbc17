"""The request-body rules of `synapse.core.validation` on a body made for the test: strict JSON types,
every broken rule named, null only where a field says so, and the JSON Schema stating the same."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import pytest
from synapse.core.errors import Unprocessable
from synapse.core.validation import Body, Broken, Invalid, Rule, accepts, json_schema


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


def _even(value: int) -> int:
    if value % 2:
        raise Invalid("even", "must be even")
    return value


class Sample(Body):
    """A body for the test."""

    name: str = accepts(Rule(check=str.strip, schema={"maxLength": 10}))
    count: int = accepts(Rule("integer", minimum=0, maximum=10, check=_even), default=2)
    ratio: float | None = accepts(Rule("number", minimum=0, maximum=1), default=None)
    colour: Colour = accepts(Rule(choices=Colour), default=Colour.RED)
    sizes: list[str] = accepts(
        Rule("array", items=Rule(choices=("s", "m")), min_items=1), default_factory=lambda: ["s"]
    )
    enabled: bool | None = accepts(Rule("boolean"), default=None, nullable=False)

    def check_whole(self) -> None:
        if self.name == "nobody":
            raise Invalid("whole", "not a name")


def refused(body: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Unprocessable) as caught:
        Sample.from_body(body)
    return [(d["field"], d["rule"]) for d in caught.value.details]


def test_a_valid_body_takes_its_defaults_and_normalised_values() -> None:
    # When a body names only what it must
    sample = Sample.from_body({"name": "  ada ", "colour": "blue"})
    # Then the checks normalise, enums become members, and defaults fill the rest
    assert (sample.name, sample.count, sample.ratio, sample.colour) == ("ada", 2, None, Colour.BLUE)
    assert sample.sizes == ["s"] and sample.enabled is None
    # And it knows what was sent
    assert sample.sent == {"name", "colour"}


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("name", 5, "type"),
        ("name", None, "type"),  # required: null is the wrong type
        ("count", True, "type"),  # JSON true is not 1
        ("count", 2.5, "type"),  # nor is 2.5 a whole number (2.0 is: JSON's number 2)
        ("count", "2", "type"),
        ("count", 12, "range"),
        ("count", 3, "even"),
        ("ratio", True, "type"),
        ("ratio", 1.5, "range"),
        ("colour", "green", "enum"),
        ("colour", 1, "enum"),
        ("sizes", "s", "type"),
        ("sizes", [], "too_short"),
        ("sizes[1]", ["s", "xl"], "enum"),
        ("enabled", None, "not_null"),  # may be left out, but null would not mean anything
        ("extra", 1, "unknown_field"),
    ],
)
def test_each_broken_rule_is_named(field: str, value: Any, rule: str) -> None:
    assert refused({"name": "ada", field.split("[")[0]: value}) == [(field, rule)]


def test_every_broken_field_is_named_at_once_and_a_whole_rule_waits_for_them() -> None:
    assert refused({"count": 3, "sizes": [1, 2], "other": 0}) == [
        ("name", "required"),
        ("count", "even"),
        ("sizes[0]", "enum"),
        ("sizes[1]", "enum"),
        ("other", "unknown_field"),
    ]
    assert refused({"name": "nobody"}) == [("body", "whole")]


def test_a_whole_number_with_a_point_zero_is_that_whole_number() -> None:
    # JSON has one kind of number, and JSON Schema's integer is any without a fraction: 4.0 is 4
    sample = Sample.from_body({"name": "ada", "count": 4.0})
    assert sample.count == 4 and isinstance(sample.count, int)
    assert refused({"name": "ada", "count": 3.0}) == [("count", "even")]  # and then meets its rules
    assert refused({"name": "ada", "count": 1e300}) == [("count", "range")]


class Patch(Body):
    """A body that must change something."""

    nothing_given = "give something to change"
    first: str | None = accepts(Rule(), default=None)
    second: int | None = accepts(Rule("integer"), default=None, nullable=False)


def test_a_body_that_must_give_something_refuses_nothing_and_says_so_in_its_schema() -> None:
    # Given nothing, or only nulls, it is one 422 on the whole body, with the body's message
    for body in ({}, {"first": None}):
        with pytest.raises(Unprocessable) as caught:
            Patch.from_body(body)
        assert caught.value.details == [
            {"field": "body", "rule": "required", "message": "give something to change"}
        ]
    assert Patch.from_body({"second": 0}).second == 0
    # And the schema asks for one field at least, not null
    schema = json_schema(Patch, lambda kind: f"#/{kind.__name__}")
    assert schema["minProperties"] == 1
    assert schema["anyOf"] == [
        {"required": ["first"], "properties": {"first": {"not": {"type": "null"}}}},
        {"required": ["second"], "properties": {"second": {"not": {"type": "null"}}}},
    ]


def test_a_nullable_field_takes_null_as_not_given() -> None:
    assert Sample.from_body({"name": "ada", "ratio": None}).ratio is None


def test_the_schema_states_the_same_rules() -> None:
    # When the body is described
    schema = json_schema(Sample, lambda kind: f"#/{kind.__name__}")
    # Then it is closed, names what is required, and carries each rule's bounds and defaults
    assert schema["additionalProperties"] is False and schema["required"] == ["name"]
    assert schema["description"] == "A body for the test."
    fields = schema["properties"]
    assert fields["name"] == {"type": "string", "maxLength": 10}
    assert fields["count"] == {"type": "integer", "minimum": 0, "maximum": 10, "default": 2}
    assert fields["ratio"] == {
        "anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}],
        "default": None,
    }
    assert fields["colour"] == {"$ref": "#/Colour", "default": "red"}
    assert fields["sizes"] == {
        "type": "array",
        "minItems": 1,
        "items": {"type": "string", "enum": ["s", "m"]},
    }
    assert fields["enabled"] == {"type": "boolean"}


def test_a_body_is_read_only() -> None:
    sample = Sample.from_body({"name": "ada"})
    with pytest.raises(AttributeError):
        sample.name = "eve"  # type: ignore[misc]
    assert repr(sample).startswith("Sample(name='ada', count=2")


@pytest.mark.parametrize(
    ("rule", "value", "says"),
    [
        (Rule("integer", minimum=1), 0, "must be at least 1 (got 0)"),
        (Rule("integer", maximum=9), 10, "must be at most 9 (got 10)"),
        (Rule("number", minimum=0, maximum=1), 1.5, "must be between 0 and 1 (got 1.5)"),
    ],
)
def test_a_range_says_its_bounds(rule: Rule, value: float, says: str) -> None:
    with pytest.raises(Broken) as caught:
        rule.accept(value, "n")
    assert caught.value.details == [{"field": "n", "rule": "range", "message": says}]
