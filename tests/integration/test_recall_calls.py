"""Recall's DynamoDB round trips (issue 23 item 6): few calls, made in parallel, and an answer byte for
byte what it was before the calls were cut."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from synapse.recall import reads
from synapse.recall.query import RecallQuery
from synapse.storage import tables

from infra.stream_pump import Pump
from tests.support import recall_matrix
from tests.support.api import Api
from tests.support.calls import counted_calls
from tests.support.clock import MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


def test_recall_matrix_answers_byte_for_byte_what_it_did(api: Api, moved: MovableClock, pump: Pump) -> None:
    # Given minds of every priority, verification, category, tag and expiry mix, fresh, expired not
    # swept, swept, and larger than a page
    # When each is recalled with and without filters, budgets and q, as text and JSON
    found = recall_matrix.answers(api, moved, pump)
    if os.environ.get("SYNAPSE_RECORD_RECALL_MATRIX"):
        recall_matrix.record(found)
        pytest.skip("recorded")
    # Then every answer is what the recall code before issue 23 item 6 gave
    expected = recall_matrix.recorded()
    assert found.keys() == expected.keys()
    for state, cases in expected.items():
        for case, was in zip(found[state], cases, strict=True):
            assert case == was, (state, was["query"])


def _recall_calls(mind_id: str, **query: Any) -> tuple[Counter[str], int]:
    """The DynamoDB calls and items read of one recall, from the layer (so no rate-limit write)."""
    before = sum(tables.reads.values())
    with counted_calls() as calls:
        reads.recall_of(mind_id, RecallQuery(**query))
    return calls, sum(tables.reads.values()) - before


def test_a_default_recall_of_a_typical_mind_makes_three_calls(api: Api, moved: MovableClock) -> None:
    # Given a mind of 100 memories: six categories, low ones, expired ones the sweep has not taken
    mind = recall_matrix.typical_mind(api, moved)
    # When an agent recalls it without filters
    calls, read = _recall_calls(mind.id)
    # Then it takes three calls: head and counters, the expired not swept, the recall index
    assert calls == {"Query": 1, "Query:mind_expiring": 1, "Query:recall": 1}
