"""DELETE /minds/{mind_id} answers at once; the purge of its memories runs elsewhere (issue 43 item 5).

In AWS the purge is PurgeMindFunction, invoked asynchronously; here a recording starter stands in
for the invoke, and the purge function's own handler is then run with the event it would get."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from synapse.lifecycle import purges
from synapse.storage import tables

from infra.gateway import LambdaContext, load_handler
from tests.support.api import Api, MindHandle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def started() -> Iterator[list[str]]:
    """The minds whose purge was handed elsewhere, in order."""
    asked: list[str] = []
    purges.install(asked.append)
    yield asked
    purges.install(None)


def _items_of(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :mind",
            ExpressionAttributeValues=tables.values(mind=mind_id),
        )
    )


def _run_purge(mind_id: str) -> dict[str, Any]:
    handler = load_handler(ROOT / "functions" / "purge_mind", "app.handler")
    answer: dict[str, Any] = handler(purges.event_for(mind_id), LambdaContext(function_name="purge_mind"))
    return answer


def _mind_with_memories(api: Api, count: int) -> MindHandle:
    mind = api.create_mind()
    for i in range(count):
        assert api.store(mind, key=f"fact_{i}", content=f"Fact number {i}", tags=["t"]).status == 201
    return mind


def test_delete_answers_before_the_purge_and_the_mind_is_gone_at_once(api: Api, started: list[str]) -> None:
    # Given a mind with memories
    mind = _mind_with_memories(api, 5)
    # When its owner deletes it
    answer = api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt)
    # Then the answer comes before any memory is purged, and the purge was handed on
    assert answer.status == 204, answer.text
    assert started == [mind.id]
    assert _items_of(mind.id) != []
    # And the mind is unreadable and its Mind Key dead at once
    recall = api.call("GET", "/memory/recall", token=mind.key)
    assert recall.status in (401, 404), recall.text
    stored = api.store(mind, as_agent=True, key="late", content="too late")
    assert stored.status in (401, 404), stored.text
    # And GET /minds/{mind_id} says the purge is under way
    got = api.call("GET", f"/minds/{mind.id}", token=mind.jwt)
    assert got.status == 404
    assert "being purged" in got.json()["error"]["message"]


def test_the_purge_function_removes_everything_and_counts_its_progress(api: Api, started: list[str]) -> None:
    # Given a deleted mind whose purge has not run
    mind = _mind_with_memories(api, 4)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When the purge function runs with the event the DELETE sent
    answer = _run_purge(started[0])
    # Then every memory item is gone, and the mind is gone for good (a repeated DELETE finds nothing)
    assert answer["purged"] > 0
    assert _items_of(mind.id) == []
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 404
    got = api.call("GET", f"/minds/{mind.id}", token=mind.jwt)
    assert "being purged" not in got.text


def test_a_purge_that_never_ran_is_started_again_by_a_repeated_delete(api: Api, started: list[str]) -> None:
    # Given a deleted mind whose purge was lost (say it failed past its retries)
    mind = _mind_with_memories(api, 3)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When its owner sends the DELETE again
    again = api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt)
    # Then it is accepted and the purge is started again; running it twice is harmless
    assert again.status == 204, again.text
    assert started == [mind.id, mind.id]
    _run_purge(mind.id)
    assert _run_purge(mind.id)["purged"] == 0
    assert _items_of(mind.id) == []


def test_another_user_learns_nothing_of_a_deletion(api: Api, started: list[str]) -> None:
    # Given a mind deleted by its owner, its purge under way
    mind = _mind_with_memories(api, 1)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When someone else asks for it
    stranger = api.create_mind(user="user-2")
    got = api.call("GET", f"/minds/{mind.id}", token=stranger.jwt)
    # Then it is a plain 404 with no word of the purge
    assert got.status == 404
    assert "purged" not in got.text
