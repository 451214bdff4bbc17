"""`core.records.Record`: the keyword-built, read-only records of the process-wide values (settings,
limits, the retry policy), cheaper at import than a NamedTuple (issue 35)."""

from __future__ import annotations

from typing import ClassVar

import pytest
from synapse.core.records import Record


class Policy(Record):
    shared: ClassVar[str] = "not a field"
    name: str
    attempts: int = 3
    tags: tuple[str, ...] = ()


def test_a_record_takes_its_fields_by_keyword_with_their_defaults() -> None:
    # Given a record class with a required field, defaults and a class variable
    # When one is made giving only the required field
    policy = Policy(name="retry")
    # Then it holds its fields in order, the defaults filled in, and no class variable among them
    assert Policy._fields == ("name", "attempts", "tags")
    assert (policy.name, policy.attempts, policy.tags) == ("retry", 3, ())
    assert repr(policy) == "Policy(name='retry', attempts=3, tags=())"


def test_a_record_is_read_only_and_equal_by_value() -> None:
    # Given two records of the same values and one of another
    one, same, other = Policy(name="a", attempts=1), Policy(name="a", attempts=1), Policy(name="b")
    # Then equal values are equal records with one hash, and no field can be set or deleted
    assert one == same and hash(one) == hash(same) and one != other and one != ("a", 1, ())
    with pytest.raises(AttributeError):
        one.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del one.name


def test_a_record_refuses_an_unknown_or_missing_field() -> None:
    with pytest.raises(TypeError, match="no field 'colour'"):
        Policy(name="a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="needs 'name'"):
        Policy()  # type: ignore[call-arg]
