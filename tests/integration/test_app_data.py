"""Application data (docs/api.md "Application data"): a memory tagged `app:private` is an app's own
(a LangGraph store's items, say), not the person's. Recall, search and the review queue
(`GET /memory?verified=false`) without a `tag` leave it out, header counts included; a `tag` filter
that names one of its tags brings it back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock

from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user, ok
from tests.support.clock import MovableClock
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

APP_TAGS = ["app:private", "app:langgraph"]


@pytest.fixture
def mind(api: Api) -> MindHandle:
    """A mind with two memories of the person's and two of an app's, all about tea."""
    made = api.create_mind()
    for key, content in (("tea", "Drinks green tea"), ("teapot", "Owns a blue teapot")):
        ok(api.store(made, key=key, content=content, category="preference"), 201)
    for key, content in (("editor_state", "tea: oolong"), ("draft", "tea order draft")):
        ok(api.store(made, as_agent=True, key=key, content=content, tags=APP_TAGS), 201)
    ok(api.store(made, as_agent=True, key="old_draft", content="tea", tags=APP_TAGS, priority="low"), 201)
    return made


def recall(api: Api, mind: MindHandle, **query: Any) -> dict[str, Any]:
    answer = api.call("GET", "/memory/recall", query={"format": "json", **query}, **as_agent(mind))
    return ok(answer)


def keys_of(answer: dict[str, Any]) -> list[str]:
    return sorted(m["key"] for m in answer["memories"])


def test_recall_leaves_an_apps_private_memories_out_unless_its_tag_is_asked(
    api: Api, mind: MindHandle
) -> None:
    # When an agent recalls the mind, for a whole mind, a category or a message
    whole = recall(api, mind)
    note = recall(api, mind, category="note")
    # Then only the person's memories are in it, and the counts are theirs alone
    assert keys_of(whole) == ["tea", "teapot"] and whole["total"] == 2, whole
    assert keys_of(note) == [] and note["total"] == 0, note
    text = api.call("GET", "/memory/recall", **as_agent(mind)).text
    assert "Memories: 2 total (2 verified, 0 unverified)" in text and "app:private" not in text
    # When it asks for the app's tag, Then the app's memories are what it gets, counted
    apps = recall(api, mind, tag="app:langgraph")
    assert keys_of(apps) == ["draft", "editor_state", "old_draft"] and apps["total"] == 3, apps


def test_the_review_queue_leaves_an_apps_private_memories_out_unless_its_tag_is_asked(
    api: Api, mind: MindHandle
) -> None:
    # Given, besides the app's three unverified memories, an agent's guess about the person
    ok(api.store(mind, as_agent=True, key="guess", content="Maybe likes jazz"), 201)

    def listed(**query: Any) -> list[str]:
        return keys_of(ok(api.call("GET", "/memory", query=query, **as_user(mind))))

    # When the person lists what waits for review (GET /memory?verified=false, the console's queue)
    # Then only the guess is in it: the app's data is not the person's to vouch for
    assert listed(verified="false") == ["guess"]
    # When the list asks for the app's tag, Then the app's unverified memories come back
    assert listed(verified="false", tag="app:langgraph") == ["draft", "editor_state", "old_draft"]
    # And the plain list shows every memory, the app's too
    assert listed() == ["draft", "editor_state", "guess", "old_draft", "tea", "teapot"]


def test_search_leaves_an_apps_private_memories_out_unless_its_tag_is_asked(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    pump.run_once()
    # When an agent searches the mind for a word both the person's and the app's memories hold
    found = ok(api.call("GET", "/memory/search", query={"q": "tea"}, **as_agent(mind)))
    # Then only the person's are found (the teapot by meaning, beside the word's own hit)
    assert sorted(r["memory"]["key"] for r in found["results"]) in (["tea"], ["tea", "teapot"])
    assert found["results"][0]["memory"]["key"] == "tea"
    # And with the app's tag, the app's are
    asked = ok(api.call("GET", "/memory/search", query={"q": "tea", "tag": "app:private"}, **as_agent(mind)))
    assert sorted(r["memory"]["key"] for r in asked["results"]) == ["draft", "editor_state", "old_draft"]
    # And a recall for a message does not bring them in either
    relevant = recall(api, mind, q="what tea order")
    assert keys_of(relevant) == ["tea", "teapot"], relevant


def test_an_apps_private_memory_that_expired_is_not_taken_off_the_persons_counts(
    api: Api, movable_clock: MovableClock
) -> None:
    # Given a mind with a memory of the person's and an app's private one that expires in an hour
    mind = api.create_mind()
    ok(api.store(mind, key="tea", content="Drinks green tea"), 201)
    soon = clock.to_iso(movable_clock.now() + timedelta(hours=1))
    ok(api.store(mind, as_agent=True, key="draft", content="x", tags=APP_TAGS, expires_at=soon), 201)
    # When the hour has passed (the sweep has not run) and an agent recalls the mind
    movable_clock.advance(hours=2)
    whole = recall(api, mind)
    # Then the person's memory is counted, once
    assert keys_of(whole) == ["tea"] and whole["total"] == 1, whole
