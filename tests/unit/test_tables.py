"""DynamoDB helpers that need no table: batch deletes under throttling."""

from __future__ import annotations

import time
from typing import Any

import pytest
from synapse.storage import tables


class ThrottlingClient:
    """Leaves the first request's items unprocessed twice, as a throttled table does."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def batch_write_item(self, RequestItems: dict[str, list[Any]]) -> dict[str, Any]:
        (requests,) = RequestItems.values()
        self.calls.append(len(requests))
        if len(self.calls) <= 2:
            return {"UnprocessedItems": RequestItems}
        return {"UnprocessedItems": {}}


def test_batch_delete_resends_unprocessed_items_after_growing_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table that throttles the first two writes
    fake = ThrottlingClient()
    pauses: list[float] = []
    monkeypatch.setattr(tables, "client", lambda: fake)
    monkeypatch.setattr(time, "sleep", pauses.append)
    # When 30 keys are deleted
    tables.batch_delete("t", [{"pk": "p", "sk": f"s{i}"} for i in range(30)])
    # Then the first 25 are sent three times, the last 5 once, with a longer pause each time
    assert fake.calls == [25, 25, 25, 5]
    assert len(pauses) == 2 and 0 < pauses[0] <= pauses[1]


@pytest.mark.parametrize("tiny", [2.9333524013694835e-152, -1e-200, 5e-324])
def test_a_float_nearer_zero_than_dynamodb_stores_is_written_as_zero(tiny: float) -> None:
    # Given a float DynamoDB would refuse (its numbers reach down to 1E-130 in magnitude)
    # When it is written, then it goes as 0.0 and reads back as 0.0
    written = tables.dump({"confidence": tiny, "kept": 0.7, "smallest": 1e-130})
    assert written["confidence"] == {"N": "0.0"}
    assert written["kept"] == {"N": "0.7"} and written["smallest"] == {"N": "1E-130"}
    assert tables.load(written)["confidence"] == 0.0
