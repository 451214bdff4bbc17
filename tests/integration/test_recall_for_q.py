"""GET /memory/recall?q=…: the memories most relevant to the user's message come right after the
critical ones, within the same budget; without q recall is what it always was."""

from __future__ import annotations

from typing import Any

import pytest

from infra.stream_pump import Pump
from tests.integration.test_reads import get
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, assert_error
from tests.support.clock import MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


@pytest.fixture
def stocked(api: Api, mind: MindHandle, moved: MovableClock, pump: Pump) -> dict[str, str]:
    """A mind of 30 memories: one critical, high ones about work, and a low one about coffee."""
    ids = {}

    def put(key: str, content: str, priority: str = "normal", category: str = "fact") -> None:
        moved.advance(seconds=1)
        answer = api.store(mind, category=category, key=key, content=content, priority=priority)
        assert answer.status in (200, 201), answer.text
        ids[key] = answer.json()["id"]

    put("user_name", "Michael Schäfer", "critical", "identity")
    put("coffee_order", "Drinks flat white with oat milk", "low", "preference")
    for n in range(25):
        put(
            f"project_{n}",
            f"Project {n} status: the migration of service {n} is on track " * 2,
            "high",
            "project",
        )
    put("daughter", "Daughter Lena was born on 14 March 2019", "normal", "identity")
    put("dentist", "Dentist appointment every March", "normal", "note")
    pump.run_once()
    return ids


def recall(api: Api, mind: MindHandle, **query: Any) -> dict[str, Any]:
    body: dict[str, Any] = get(api, mind, "/memory/recall", format="json", **query).json()
    return body


def test_the_memory_relevant_to_q_follows_the_critical_ones(
    api: Api, mind: MindHandle, stocked: dict[str, str]
) -> None:
    # Given a mind where the coffee memory is low priority, so recall summarises it
    plain = recall(api, mind, max_chars=2000)
    assert stocked["coffee_order"] not in [m["id"] for m in plain["memories"]] and plain["relevant"] == []
    # When recall is asked for the user's message
    focused = recall(api, mind, max_chars=2000, q="What coffee does he drink?")
    # Then the critical memory stays first, the coffee memory follows it in full, the rest after
    shown = [m["key"] for m in focused["memories"]]
    assert shown[:2] == ["user_name", "coffee_order"] and focused["relevant"] == [stocked["coffee_order"]]
    assert focused["total"] == plain["total"] and shown.count("coffee_order") == 1
    assert "coffee_order" not in (focused["low_priority"] or {"keys": []})["keys"]
    text = get(api, mind, "/memory/recall", max_chars=2000, q="What coffee does he drink?").text
    assert len(text) <= 2000 and text.index("user_name") < text.index("Drinks flat white") < text.index(
        "project_"
    )
    assert "Low priority, not shown in full" not in text  # its only low memory is shown in full


def test_several_relevant_memories_come_best_first(
    api: Api, mind: MindHandle, stocked: dict[str, str]
) -> None:
    focused = recall(
        api, mind, max_chars=3000, q="When was his daughter Lena born? And the dentist in March?"
    )
    shown = [m["key"] for m in focused["memories"]]
    assert shown[0] == "user_name" and set(shown[1:3]) == {"daughter", "dentist"}
    assert focused["relevant"][:2] == [stocked["daughter"], stocked["dentist"]]


def test_without_q_or_with_nothing_searchable_recall_is_unchanged(
    api: Api, mind: MindHandle, stocked: dict[str, str]
) -> None:
    plain = get(api, mind, "/memory/recall", max_chars=2000).text
    for q in ("", "?!", "🙂", "zzzunknownword"):
        assert get(api, mind, "/memory/recall", max_chars=2000, q=q).text == plain, q


def test_q_respects_the_recall_filters(api: Api, mind: MindHandle, stocked: dict[str, str]) -> None:
    focused = recall(api, mind, category=["identity", "project"], q="coffee daughter")
    assert focused["relevant"] == [stocked["daughter"]]
    assert "coffee_order" not in [m["key"] for m in focused["memories"]]


def test_an_overlong_q_is_a_400_naming_it(api: Api, mind: MindHandle, stocked: dict[str, str]) -> None:
    answer = api.call("GET", "/memory/recall", query={"q": "word " * 801}, **as_agent(mind))
    assert_error(answer, 400)
    assert answer.json()["error"]["details"][0]["field"] == "q"
    long_message = "Please remind me about coffee. " + "Some more context here. " * 60
    assert recall(api, mind, q=long_message)["relevant"] == [stocked["coffee_order"]]
