"""Pagination cursors: opaque, signed, and bound to one mind and one query."""

from __future__ import annotations

import base64
import json

import pytest
from synapse.core.errors import BadRequest
from synapse.storage import cursor

POSITION = {"pk": "m_a", "sk": "MEM#fact#home_city", "created_sk": "2026-01-01T00:00:00.000Z#mem_x"}


def test_a_cursor_round_trips_for_its_mind_and_query() -> None:
    token = cursor.encode("m_a", "list?category=fact", POSITION)
    assert cursor.decode(token, "m_a", "list?category=fact") == POSITION


@pytest.mark.parametrize(
    ("mind", "scope"),
    [("m_b", "list?category=fact"), ("m_a", "list?category=note"), ("m_a", "list?")],
)
def test_a_cursor_for_another_mind_or_query_is_a_400(mind: str, scope: str) -> None:
    token = cursor.encode("m_a", "list?category=fact", POSITION)
    with pytest.raises(BadRequest) as caught:
        cursor.decode(token, mind, scope)
    assert caught.value.details[0]["field"] == "cursor"


def test_a_forged_cursor_is_a_400() -> None:
    # Given a genuine cursor whose payload an attacker rewrites to point into another mind
    token = cursor.encode("m_a", "list?", POSITION)
    body, signature = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["m"] = "m_b"
    payload["p"]["pk"] = "m_b"
    forged_body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    # Then neither the forgery (for m_b) nor the original signature with the new body pass
    with pytest.raises(BadRequest):
        cursor.decode(f"{forged_body}.{signature}", "m_b", "list?")


@pytest.mark.parametrize(
    "garbage",
    ["", ".", "abc", "abc.def", "a.b.c", "!!!.???", "😀.😀", "\x00", "e30." + "A" * 43, "x" * 5000],
)
def test_garbage_is_a_400(garbage: str) -> None:
    with pytest.raises(BadRequest):
        cursor.decode(garbage, "m_a", "list?")


def _resigned(position: dict[str, object]) -> str:
    """A cursor for m_a holding `position`, signed with the pepper (as only the service can)."""
    return cursor.encode("m_a", "list?", position)


@pytest.mark.parametrize(
    "position",
    [
        {"pk": "m_a", "sk": "S" * 1024},  # a sort key's bound: 1,024 bytes
        {"pk": "m_a", "sk": "é" * 512},  # 1,024 bytes in 512 characters
        {"o": 0},
        {"o": 2**31 - 1},
    ],
)
def test_a_position_at_dynamodb_s_bounds_is_accepted(position: dict[str, object]) -> None:
    assert cursor.decode(_resigned(position), "m_a", "list?") == position


@pytest.mark.parametrize(
    "position",
    [
        {"pk": "m_a", "sk": "S" * 1025},
        {"pk": "m_a", "sk": "é" * 513},  # 1,026 bytes, though 513 characters
        {"pk": "m_a", "created_sk": "x" * 1500},
        {"pk": "m_a", "sk": ""},
        {"pk": "m_a", "sk": 7},
        {"pk": "m_a", "sk": 1.5},
        {"pk": "m_a", "sk": "\ud800"},
        {"o": -1},
        {"o": True},
        {"o": "3"},
        {"o": 2**31},
        {"o": 1.0},
    ],
)
def test_a_signed_position_no_key_of_ours_could_hold_is_a_400(position: dict[str, object]) -> None:
    with pytest.raises(BadRequest) as caught:
        cursor.decode(_resigned(position), "m_a", "list?")
    assert caught.value.details[0]["rule"] == "cursor"


def test_a_cursor_with_characters_outside_base64url_is_a_400() -> None:
    # b64decode would skip them, so the genuine cursor with a "!" in it would otherwise still pass
    token = cursor.encode("m_a", "list?", POSITION)
    with pytest.raises(BadRequest):
        cursor.decode(token[:5] + "!" + token[5:], "m_a", "list?")
