"""Pure parts of inbound hooks: what a delivery body may hold, how a failed item is reported, the
rotation body."""

from __future__ import annotations

import pytest
from synapse.core.errors import Unprocessable
from synapse.memory.model import MemoryWrite
from synapse.webhooks import batch, bodies, receive, signing


def test_a_body_without_memories_is_one_memory() -> None:
    body = {"category": "fact", "key": "k", "content": "c"}
    assert receive._items(body) == [body]


def test_a_batch_body_yields_its_items_in_order() -> None:
    items = [{"key": str(i)} for i in range(receive.MAX_BATCH)]
    assert receive._items({"memories": items}) == items


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"memories": []}, "memories", "max_items"),
        ({"memories": [{}] * (receive.MAX_BATCH + 1)}, "memories", "max_items"),
        ({"memories": {"a": 1}}, "memories", "max_items"),
        ({"memories": [{}], "mind_id": "m_x"}, "mind_id", "unknown_field"),
    ],
)
def test_a_batch_of_the_wrong_shape_is_refused_whole(body: dict[str, object], field: str, rule: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        receive._items(body)
    assert caught.value.details[0]["field"] == field and caught.value.details[0]["rule"] == rule


def test_a_failed_items_report_is_bounded_whatever_it_broke() -> None:
    # Given an item with a thousand unknown fields, each with a very long name
    item = {"x" * 5000 + str(i): i for i in range(1000)}
    with pytest.raises(Unprocessable) as caught:
        MemoryWrite.from_body(item)
    # When it is reported
    report = batch._error(caught.value)
    # Then a few details, each clipped, stand for all of them
    assert len(report["details"]) == batch.MAX_DETAILS_PER_ITEM
    assert all(len(v) <= batch.MAX_TEXT_CHARS for d in report["details"] for v in d.values())
    assert len(report["message"]) <= batch.MAX_TEXT_CHARS and report["code"] == "validation_error"


def test_rotation_grace_defaults_to_a_day_and_allows_zero_to_seven_days() -> None:
    assert bodies.HookRotate.from_body({}).grace_seconds == 24 * 3600
    assert bodies.HookRotate.from_body({"grace_seconds": 0}).grace_seconds == 0
    assert bodies.HookRotate.from_body({"grace_seconds": 7 * 24 * 3600}).grace_seconds == 7 * 24 * 3600
    for bad in (-1, 7 * 24 * 3600 + 1, "60", 1.5, True):
        with pytest.raises(Unprocessable):
            bodies.HookRotate.from_body({"grace_seconds": bad})


def test_secrets_are_prefixed_and_unguessable() -> None:
    made = {signing.new_secret() for _ in range(100)}
    assert len(made) == 100
    assert all(s.startswith("whsec_") and len(s) >= 6 + 43 for s in made)
