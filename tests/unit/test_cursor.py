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
