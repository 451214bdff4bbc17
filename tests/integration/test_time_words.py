"""Time in questions through the gateway (issue 42 items 5-6): search's soft time window, time words
not matched as words, `now=`/`tz=`, and recall's "Coming up". The real handlers, moto DynamoDB, its
stream fed to the real indexer; the clock stands at Monday 2026-11-30 08:00 UTC while memories are
written, so the dates in their content are read relative to it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from synapse.index import generations, schema

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, assert_error
from tests.support.clock import MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.expiry import mcp_tool
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

MEMORIES = {
    "user_name": ("Michael Schäfer", "critical"),
    "dentist": ("Dentist appointment with Dr. Weber on Dec 9", "normal"),  # Wednesday next week
    "offsite": ("Team offsite next Tuesday in the Hamburg office", "normal"),  # 8 December
    "bank": ("Call the bank about the mortgage on 2026-12-07", "normal"),  # Monday next week
    "birthday": ("Mom's birthday is on 2026-12-02, call her", "high"),  # this week
    "renovation": ("Kitchen renovation planned for next summer", "normal"),
    "next_car": ("Next car will be an electric one", "normal"),
    "spouse": ("Wife is Anna, married since 2015", "normal"),
    "review": ("Reviewing the docs pull request this week", "normal"),  # a week, no day
}


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


@pytest.fixture
def dated(api: Api, mind: MindHandle, moved: MovableClock, pump: Pump) -> dict[str, str]:
    ids = {}
    for key, (content, priority) in MEMORIES.items():
        moved.advance(seconds=1)
        category = "identity" if key == "user_name" else "note"
        answer = api.store(mind, category=category, key=key, content=content, priority=priority)
        assert answer.status in {200, 201}, answer.text
        ids[key] = answer.json()["id"]
    pump.run_once()
    return ids


def search(api: Api, mind: MindHandle, q: str, **params: Any) -> HttpResponse:
    return api.call("GET", "/memory/search", query={"q": q, **params}, **as_agent(mind))


def keys(answer: HttpResponse) -> list[str]:
    assert answer.status == 200, answer.text
    return [r["memory"]["key"] for r in answer.json()["results"]]


def test_next_week_finds_what_is_dated_next_week_not_next_summer(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When an agent asks what is coming up next week (now: Monday 30 November)
    answer = search(api, mind, "What is coming up next week?")
    found = keys(answer)
    # Then the memories dated 7-13 December come first, though they share no word with the question
    assert set(found[:3]) == {"dentist", "offsite", "bank"}, found
    # And "next" is not searched as a word: the plans for next summer and the next car stay below
    assert "next" not in answer.json()["terms"] and "week" not in answer.json()["terms"]
    assert found.index("renovation") > 2 if "renovation" in found else True


def test_a_season_or_a_holiday_reads_as_its_days_and_stays_a_word(
    api: Api, mind: MindHandle, dated: dict[str, str], pump: Pump
) -> None:
    # Given memories dated in July 2027 and on Christmas Day 2025 that name neither season nor holiday
    for key, content in [
        ("crete", "Flights to Crete on July 14, 2027"),
        ("lunch", "Lunch at Anna's on 2025-12-25"),
    ]:
        assert api.store(mind, category="note", key=key, content=content).status == 201
    pump.run_once()
    # When an agent asks about next summer (now: Monday 30 November 2026)
    summer = search(api, mind, "What are we doing next summer?")
    # Then the flights (in June-August 2027) and the renovation (the word "summer") come first
    assert set(keys(summer)[:2]) == {"crete", "renovation"}, keys(summer)
    assert "summer" in summer.json()["terms"] and "next" not in summer.json()["terms"]
    # And last Christmas is the 25th of December 2025
    assert keys(search(api, mind, "What did we do last Christmas?"))[0] == "lunch"


def test_the_window_is_soft_a_question_still_finds_its_undated_answer(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When a question names a time and words that only an undated memory holds
    found = keys(search(api, mind, "Anna married next week"))
    # Then that memory is still found: the window favours, it never filters
    assert "spouse" in found[:3], found


def test_words_and_window_together(api: Api, mind: MindHandle, dated: dict[str, str]) -> None:
    found = keys(search(api, mind, "dentist next week"))
    assert found[0] == "dentist", found


def test_a_memory_found_by_the_window_alone_answers_a_question_of_time_alone(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When a question asks only for a time, its dated memories are its answers
    only_time = {r["memory"]["key"]: r["relevance"] for r in search(api, mind, "next week").json()["results"]}
    assert only_time["dentist"] == "strong", only_time
    # But when it also asks about something the mind does not hold, a memory that is merely in the
    # window says nothing of it: weak ("Does he ski next week?" is not answered by the dentist)
    asked = search(api, mind, "Does he ski next week?").json()["results"]
    assert [r["memory"]["key"] for r in asked if r["relevance"] == "strong"] == [], asked
    assert "dentist" in [r["memory"]["key"] for r in asked]  # still found: the window is soft


def test_now_replays_another_moment_and_tz_decides_the_day(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # Given 23:30 UTC on Monday 7 December: still the 7th in UTC, already Tuesday the 8th in Berlin
    late = "2026-12-07T23:30:00Z"
    # Then "today" is the bank's day in UTC and the offsite's in Berlin
    assert keys(search(api, mind, "What is on today?", now=late))[0] == "bank"
    assert keys(search(api, mind, "What is on today?", now=late, tz="Europe/Berlin"))[0] == "offsite"
    # And "tomorrow" seen from the 8th is the dentist's day
    assert keys(search(api, mind, "Anything tomorrow?", now="2026-12-08"))[0] == "dentist"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"tz": "Mars/Olympus"}, "tz"),
        ({"tz": "../../etc/passwd"}, "tz"),
        ({"now": "yesterday"}, "now"),
        ({"now": "2026-12-03T10:00:00"}, "now"),
    ],
)
def test_a_bad_now_or_tz_is_a_400_naming_it(
    api: Api, mind: MindHandle, params: dict[str, str], field: str
) -> None:
    for path, query in (("/memory/search", {"q": "next week"}), ("/memory/recall", {})):
        answer = api.call("GET", path, query={**query, **params}, **as_agent(mind))
        assert_error(answer, 400)
        assert answer.json()["error"]["details"][0]["field"] == field


def recall(api: Api, mind: MindHandle, **query: Any) -> HttpResponse:
    answer = api.call("GET", "/memory/recall", query=query, **as_agent(mind))
    assert answer.status == 200, answer.text
    return answer


def test_recall_shows_what_is_coming_up_right_after_the_critical_ones(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When recall is read on Thursday 3 December (the next 7 days: 3-9 December)
    body = recall(api, mind, format="json", now="2026-12-03T10:00:00Z").json()
    order = [m["key"] for m in body["memories"]]
    # Then the critical memory comes first, then the coming days soonest first, then the rest
    assert order[:4] == ["user_name", "bank", "offsite", "dentist"], order
    assert order[4] == "birthday"  # past by now: back in its place (high)
    # And the text says when each is due
    text = recall(api, mind, now="2026-12-03T10:00:00Z").text
    assert (
        "  offsite\n  Team offsite next Tuesday in the Hamburg office\n  Coming up: 2026-12-08 (Tuesday)\n"
        in text
    )


def test_a_memory_placed_in_a_week_is_not_coming_up_though_a_window_finds_it(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When recall is read on Thursday 3 December, within the week "this week" named when written
    body = recall(api, mind, format="json", now="2026-12-03T10:00:00Z").json()
    # Then the review is not listed as due: the week places it in time, it names no day
    assert "review" not in [m["key"] for m in body["memories"]][:5]
    assert "this week\n  Coming up" not in recall(api, mind, now="2026-12-03T10:00:00Z").text
    # And a question about that week still finds it by its dates
    assert "review" in keys(search(api, mind, "What am I doing this week?", now="2026-12-03T10:00:00Z"))


def test_recall_without_anything_coming_up_reads_as_before(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When recall is read in February, when nothing is due
    text = recall(api, mind, now="2027-02-01T10:00:00Z").text
    # Then no entry says Coming up and the order is recall's own (priority, then most recent)
    assert "Coming up" not in text
    body = recall(api, mind, format="json", now="2027-02-01T10:00:00Z").json()
    assert [m["key"] for m in body["memories"]][:2] == ["user_name", "birthday"]


def test_recall_q_with_a_time_expression_uses_its_window(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # When the user's message asks about next week (now: Monday 30 November: nothing due within 7
    # days but the birthday)
    body = recall(api, mind, format="json", q="What is coming up next week?").json()
    relevant = [m["key"] for m in body["memories"] if m["id"] in body["relevant"]]
    # Then the memories dated next week are the relevant ones
    assert {"dentist", "offsite", "bank"} <= set(relevant), relevant


def _as_schema(generation: Path, version: str, change: str) -> Path:
    """Rewrite a mind's generation as an older index format (`change`: what that format lacked)."""
    db = sqlite3.connect(generation, isolation_level=None)
    generations.configure(db)
    db.execute(change)
    db.execute("UPDATE meta SET value = ? WHERE name = 'schema'", (version,))
    db.close()
    return generation


def _next_change_upgrades_in_place(api: Api, mind: MindHandle, pump: Pump, generation: Path) -> None:
    """A new dated memory indexed; the generation it lands in is the same one, now of this format."""
    answer = api.store(mind, category="note", key="plumber", content="Plumber comes on 2026-12-04")
    assert answer.status == 201, answer.text
    pump.run_once()
    assert generations.current_generation(generation.parent) == generation
    db = generations.open_read_only(generation)
    assert schema.schema_of(db) == schema.SCHEMA_VERSION
    db.close()


def _published(index_root: Path, mind: MindHandle) -> Path:
    found = generations.current_generation(index_root / mind.id)
    assert found is not None
    return found


def test_an_index_of_schema_4_learns_which_days_are_due_in_place(
    api: Api, mind: MindHandle, dated: dict[str, str], index_root: Path, pump: Pump
) -> None:
    # Given a mind whose published index is of schema 4 (every day counts as due)
    old = _as_schema(_published(index_root, mind), "4", "ALTER TABLE doc_dates DROP COLUMN due")
    # Then recall still lists what is coming up, the week-long review among it meanwhile
    text = recall(api, mind, now="2026-12-03T10:00:00Z").text
    assert "Coming up: 2026-12-08 (Tuesday)" in text and "this week\n  Coming up" in text
    # When the next change of that mind is indexed, the generation is upgraded in place
    _next_change_upgrades_in_place(api, mind, pump, old)
    # Then only days named on their own are due
    text = recall(api, mind, now="2026-12-03T10:00:00Z").text
    assert "Coming up: 2026-12-04 (Friday)" in text and "this week\n  Coming up" not in text


def test_the_mcp_tools_read_time_from_the_askers_now_and_zone(
    api: Api, mind: MindHandle, dated: dict[str, str]
) -> None:
    # Given 23:30 UTC on Monday 7 December: still the 7th in UTC, already Tuesday the 8th in Berlin
    late = "2026-12-07T23:30:00Z"
    # When the search tool is asked what is on today, with and without the asker's zone
    failed, utc = mcp_tool(api, mind.key, "search", query="What is on today?", now=late)
    failed_too, berlin = mcp_tool(
        api, mind.key, "search", query="What is on today?", now=late, tz="Europe/Berlin"
    )
    # Then today is the bank's day in UTC and the offsite's in Berlin, as REST's now=/tz= read it
    assert not failed and not failed_too
    assert json.loads(utc)["results"][0]["key"] == "bank"
    assert json.loads(berlin)["results"][0]["key"] == "offsite"
    # And the recall tool lists what is coming up from the asker's now (Thursday 3 December)
    failed, text = mcp_tool(api, mind.key, "recall", now="2026-12-03T10:00:00Z", tz="Europe/Berlin")
    assert not failed and "Coming up: 2026-12-08 (Tuesday)" in text
    failed, text = mcp_tool(api, mind.key, "recall", now="2027-02-01")
    assert not failed and "Coming up" not in text


@pytest.mark.parametrize(
    ("arguments", "field"), [({"tz": "Mars/Olympus"}, "tz"), ({"now": "2026-12-03T10:00:00"}, "now")]
)
def test_a_bad_now_or_tz_is_a_tool_error_naming_it(
    api: Api, mind: MindHandle, arguments: dict[str, str], field: str
) -> None:
    for name, asked in (("search", {"query": "next week"}), ("recall", {})):
        failed, message = mcp_tool(api, mind.key, name, **asked, **arguments)
        assert failed and message.startswith(f"{field}:"), message


def test_an_index_of_schema_3_answers_meanwhile_and_gets_its_days_in_place(
    api: Api, mind: MindHandle, dated: dict[str, str], index_root: Path, pump: Pump
) -> None:
    # Given a mind whose published index is of schema 3 (no days kept)
    old = _as_schema(_published(index_root, mind), "3", "DROP TABLE doc_dates")
    # Then a question with a time expression is still answered, by its words (no window to favour)
    assert keys(search(api, mind, "dentist next week"))[0] == "dentist"
    assert "Coming up" not in recall(api, mind, now="2026-12-03T10:00:00Z").text
    # When the next change of that mind is indexed, the generation is upgraded in place
    _next_change_upgrades_in_place(api, mind, pump, old)
    # Then the old memories' dates were read from their text
    assert "Coming up: 2026-12-04 (Friday)" in recall(api, mind, now="2026-12-03T10:00:00Z").text
    assert set(keys(search(api, mind, "What is coming up next week?"))[:3]) == {"dentist", "offsite", "bank"}
