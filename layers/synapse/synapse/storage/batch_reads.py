"""Strongly consistent reads of many items at once (BatchGetItem), for a batch's writes."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from typing import Any

from synapse.storage import tables


def batch_get(table: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tables.Item]:
    """The items at (pk, sk) `keys`, strongly consistent, 100 per BatchGetItem; absent ones left out.
    Unprocessed keys are asked again after a growing pause (as `tables.batch_delete` resends)."""
    found: dict[tuple[str, str], tables.Item] = {}
    unique = list(dict.fromkeys(keys))
    for start in range(0, len(unique), 100):
        pending: dict[str, Any] = {
            "Keys": [tables.dump({"pk": pk, "sk": sk}) for pk, sk in unique[start : start + 100]],
            "ConsistentRead": True,
        }
        for attempt in itertools.count():
            answer = tables.client().batch_get_item(RequestItems={table: pending})
            for raw in answer.get("Responses", {}).get(table, []):
                item = tables.load(raw)
                found[(item["pk"], item["sk"])] = item
                tables.reads["get"] += 1
            pending = answer.get("UnprocessedKeys", {}).get(table)
            if not pending:
                break
            time.sleep(min(2.0, 0.05 * 2**attempt) * random.uniform(0.5, 1.0))
    return found
