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
