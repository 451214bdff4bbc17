"""Event time (`occurred_at`) and the time filters (`after`, `before`, `updated_after`) through the
gateway: the real handlers, moto DynamoDB built from template.yaml, and the real indexer for search."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from synapse.index import generations, schema

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.clock import MovableClock
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def store(api: Api, mind: MindHandle, key: str, content: str = "x", **fields: Any) -> dict[str, Any]:
    answer = api.store(mind, **memory_body(key=key, content=content, **fields))
    assert answer.status in (200, 201), answer.text
    body: dict[str, Any] = answer.json()
    return body


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> HttpResponse:
    return api.call("GET", path, query=query, **as_agent(mind))


def keys_of(answer: HttpResponse, field: str = "memories") -> list[str]:
    body = ok(answer)
    if field == "results":
        return [r["memory"]["key"] for r in body["results"]]
    return [m["key"] for m in body[field]]


def every_page(api: Api, mind: MindHandle, path: str, **query: Any) -> list[str]:
    keys: list[str] = []
    cursor = None
    while True:
        body = ok(get(api, mind, path, **query, **({"cursor": cursor} if cursor else {})))
        keys += [m["key"] for m in body["memories"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return keys


# ---------------------------------------------------------------- occurred_at on writes


def test_a_date_stays_a_date_and_a_timestamp_is_stored_in_utc(api: Api, mind: MindHandle) -> None:
    # Given a memory written with a date, and one with a timestamp at +02:00
    dated = store(api, mind, "dentist", occurred_at="2026-12-09")
    stamped = store(api, mind, "call", occurred_at="2026-12-09T14:30:00+02:00")
    # Then the date is kept as written and the timestamp is in UTC with Z, also when read back
    assert dated["occurred_at"] == "2026-12-09"
    assert stamped["occurred_at"] == "2026-12-09T12:30:00.000Z"
    read = ok(api.call("GET", f"/memory/{stamped['id']}", **as_agent(mind)))
    assert read["occurred_at"] == "2026-12-09T12:30:00.000Z"


def test_a_memory_without_occurred_at_says_null(api: Api, mind: MindHandle) -> None:
    assert store(api, mind, "plain")["occurred_at"] is None


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("2026-12-09T14:30:00", "timezone"),
        ("2026-02-30", "format"),
        ("next tuesday", "format"),
        ("2026-12-09 14:30", "timezone"),
    ],
)
def test_a_write_with_a_bad_occurred_at_is_a_422_naming_field_and_rule(
    api: Api, mind: MindHandle, value: str, rule: str
) -> None:
    answer = api.store(mind, **memory_body(occurred_at=value))
    assert_error(answer, 422, field="occurred_at", rule=rule)


def test_occurred_at_may_lie_in_the_past_or_the_future(api: Api, mind: MindHandle) -> None:
    assert store(api, mind, "old", occurred_at="1999-01-01")["occurred_at"] == "1999-01-01"
    assert store(api, mind, "ahead", occurred_at="2099-06-01T09:00:00Z")["occurred_at"].startswith("2099")


def test_a_put_sets_changes_and_clears_occurred_at(api: Api, mind: MindHandle) -> None:
    memory = store(api, mind, "trip", occurred_at="2026-12-09")
    path = f"/memory/{memory['id']}"
    # When a PUT moves it to a timestamp with an offset
    moved = ok(api.call("PUT", path, json_body={"occurred_at": "2026-12-10T08:00:00-05:00"}, **as_user(mind)))
    assert moved["occurred_at"] == "2026-12-10T13:00:00.000Z"
    # And a PUT leaving it out keeps it
    kept = ok(api.call("PUT", path, json_body={"content": "Trip"}, **as_user(mind)))
    assert kept["occurred_at"] == "2026-12-10T13:00:00.000Z"
    # And a PUT with null clears it
    cleared = ok(api.call("PUT", path, json_body={"occurred_at": None}, **as_user(mind)))
    assert cleared["occurred_at"] is None
    # And a bad one is a 422
    assert_error(
        api.call("PUT", path, json_body={"occurred_at": "2026-12-10T08:00"}, **as_user(mind)),
        422,
        field="occurred_at",
        rule="timezone",
    )


def test_batch_items_carry_occurred_at_and_its_rule(api: Api, mind: MindHandle) -> None:
    items = [
        memory_body(key="dated", occurred_at="2026-12-09"),
        memory_body(key="stamped", occurred_at="2026-12-09T23:30:00-01:00"),
    ]
    answer = ok(api.call("POST", "/memory/batch", json_body={"memories": items}, **as_agent(mind)))
    stored = {r["memory"]["key"]: r["memory"]["occurred_at"] for r in answer["results"]}
    assert stored == {"dated": "2026-12-09", "stamped": "2026-12-10T00:30:00.000Z"}
    refused = api.call(
        "POST",
        "/memory/batch",
        json_body={"memories": [memory_body(key="bad", occurred_at="2026-12-09T10:00")]},
        **as_agent(mind),
    )
    (failed,) = ok(refused)["results"]
    assert failed["status"] == "error"
    assert failed["error"]["details"][0] | {"message": ""} == {
        "field": "occurred_at",
        "rule": "timezone",
        "message": "",
    }


# ---------------------------------------------------------------- after / before on the list and by-tag


@pytest.fixture
def dated_mind(api: Api, mind: MindHandle, movable_clock: MovableClock) -> MindHandle:
    """Six memories stored a day apart from 2026-03-01, two of them about other days."""
    for day in range(1, 5):  # created 2026-03-01 .. 03-04, no occurred_at
        store(api, mind, f"stored_{day}", tags=["t"])
        movable_clock.advance(days=1)
    store(api, mind, "about_feb", occurred_at="2026-02-14", tags=["t"])  # stored 03-05
    movable_clock.advance(days=1)
    store(api, mind, "about_03_02_evening", occurred_at="2026-03-02T21:00:00-05:00", tags=["t"])  # 03-03 UTC
    return mind


def test_after_and_before_dates_select_whole_days_on_event_time(api: Api, dated_mind: MindHandle) -> None:
    # When the list asks for 2026-03-02 .. 2026-03-03
    keys = every_page(api, dated_mind, "/memory", after="2026-03-02", before="2026-03-03", limit=1)
    # Then the memories stored those days (at noon) and the one about 03-03 02:00 UTC (stored 03-06),
    # newest event first; the one stored on 03-05 about February is not there
    assert keys == ["stored_3", "about_03_02_evening", "stored_2"]


def test_a_date_occurred_at_counts_as_its_whole_day(api: Api, dated_mind: MindHandle) -> None:
    # A window from noon on 02-14 still holds the memory about 02-14
    keys = every_page(api, dated_mind, "/memory", after="2026-02-14T12:00:00Z", before="2026-02-28")
    assert keys == ["about_feb"]
    # and one ending that morning too
    assert every_page(api, dated_mind, "/memory", before="2026-02-14T06:00:00Z") == ["about_feb"]


def test_by_tag_takes_the_window(api: Api, dated_mind: MindHandle) -> None:
    keys = every_page(
        api, dated_mind, "/memory/by-tag", tag="t", after="2026-03-03T00:00:00Z", before="2026-03-04"
    )
    assert sorted(keys) == ["about_03_02_evening", "stored_3", "stored_4"]


def test_recall_takes_the_window(api: Api, dated_mind: MindHandle) -> None:
    body = ok(get(api, dated_mind, "/memory/recall", format="json", before="2026-02-28"))
    assert [m["key"] for m in body["memories"]] == ["about_feb"]
    # a date as `before` holds its whole day: stored_1 was stored at noon on 03-01
    body = ok(get(api, dated_mind, "/memory/recall", format="json", before="2026-03-01"))
    assert sorted(m["key"] for m in body["memories"]) == ["about_feb", "stored_1"]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ({"after": "yesterday"}, "after"),
        ({"before": "2026-13-01"}, "before"),
        ({"after": "2026-03-01T10:00:00"}, "after"),
        ({"after": "2026-03-05", "before": "2026-03-01"}, "after"),
        ({"updated_after": "soon"}, "updated_after"),
    ],
)
def test_bad_time_parameters_are_a_400_naming_them(
    api: Api, mind: MindHandle, query: dict[str, str], name: str
) -> None:
    reads = {
        "/memory": {},
        "/memory/by-tag": {"tag": "t"},
        "/memory/recall": {},
        "/memory/search": {"q": "x"},
    }
    for path, needs in reads.items():
        if name == "updated_after" and path != "/memory":
            continue
        answer = api.call("GET", path, query={**needs, **query}, **as_agent(mind))
        assert_error(answer, 400, field=name)


def test_a_timestamp_offset_sent_unencoded_still_reads(api: Api, dated_mind: MindHandle) -> None:
    # `+05:00` in a query string unencoded arrives as ` 05:00`
    keys = every_page(
        api, dated_mind, "/memory", after="2026-03-04T05:00:00 05:00", before="2026-03-04T23:00:00Z"
    )
    assert keys == ["stored_4"]


# ---------------------------------------------------------------- updated_after


def test_updated_after_lists_what_changed_since_newest_change_first(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given memories of each priority stored on 03-01, then some changed later
    made = {
        key: store(api, mind, key, priority=priority)
        for key, priority in (
            ("a", "critical"),
            ("b", "high"),
            ("c", "normal"),
            ("d", "low"),
            ("e", "normal"),
        )
    }
    movable_clock.advance(days=2)
    for key in ("d", "a", "c"):
        movable_clock.advance(minutes=5)
        ok(
            api.call(
                "PUT", f"/memory/{made[key]['id']}", json_body={"content": f"{key} changed"}, **as_user(mind)
            )
        )
    # When the list asks what changed since 03-02
    keys = every_page(api, mind, "/memory", updated_after="2026-03-02", limit=1)
    # Then the changed ones, newest change first, whatever their priority
    assert keys == ["c", "a", "d"]
    # And a timestamp between the changes cuts there
    assert every_page(api, mind, "/memory", updated_after="2026-03-03T12:12:00Z") == ["c"]


# ---------------------------------------------------------------- search


def test_search_filters_inside_the_index_beyond_the_first_top_k(
    api: Api, mind: MindHandle, movable_clock: MovableClock, pump: Pump
) -> None:
    # Given 30 memories about coffee stored on 03-01 and, later, one more dated in December
    for i in range(30):
        store(api, mind, f"coffee_{i}", f"Coffee note number {i}: espresso coffee coffee")
    movable_clock.advance(days=1)
    december = store(api, mind, "coffee_december", "Had coffee with Anna", occurred_at="2026-12-09")
    pump.run_once()
    # When search asks for coffee in December, one result a page
    for mode in ("lexical", "hybrid", "semantic"):
        answer = get(
            api,
            mind,
            "/memory/search",
            q="coffee",
            after="2026-12-01",
            before="2026-12-31",
            limit=1,
            mode=mode,
        )
        # Then the December memory is found although 30 better matches lie outside the window
        assert keys_of(answer, "results") == ["coffee_december"], mode
        assert ok(answer)["next_cursor"] is None
    hit = ok(get(api, mind, "/memory/search", q="Anna", limit=1))["results"][0]["memory"]
    assert hit["id"] == december["id"] and hit["occurred_at"] == "2026-12-09"
    # And a window before every memory finds nothing
    assert keys_of(get(api, mind, "/memory/search", q="coffee", before="2026-02-01"), "results") == []


# ---------------------------------------------------------------- MCP


def tool(api: Api, token: str, name: str, **arguments: Any) -> tuple[bool, Any]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = api.call(
        "POST",
        "/mcp",
        token=token,
        json_body=message,
        headers={"Accept": "application/json, text/event-stream"},
    )
    result = ok(answer)["result"]
    text = result["content"][0]["text"]
    try:
        return result["isError"], json.loads(text)
    except ValueError:
        return result["isError"], text


def test_mcp_remember_update_and_reads_carry_occurred_at_and_the_window(
    api: Api, mind: MindHandle, pump: Pump, movable_clock: MovableClock
) -> None:
    # Given (stored on 2026-03-01) a memory remembered over MCP with a timestamp at an offset
    failed, stored = tool(
        api, mind.key, "remember", content="Dentist appointment", occurred_at="2026-12-09T09:00:00+01:00"
    )
    assert not failed and stored["occurred_at"] == "2026-12-09T08:00:00.000Z"
    tool(api, mind.key, "remember", content="Bought a new bike")
    pump.run_once()
    # Then recall shows its date, and a window selects it in recall, search and by-tag
    _, text = tool(api, mind.key, "recall", after="2026-12-09", before="2026-12-09")
    assert "Dentist appointment\n  On: 2026-12-09 08:00 UTC" in text and "bike" not in text
    _, found = tool(api, mind.key, "search", query="dentist appointment bike", after="2026-12-01")
    assert [h["occurred_at"] for h in found["results"]] == ["2026-12-09T08:00:00.000Z"]
    # And a bad window or a zoneless time is an error naming the field
    failed, message = tool(api, mind.key, "search", query="x", after="2026-12-10", before="2026-12-01")
    assert failed and message.startswith("after:")
    failed, message = tool(api, mind.key, "remember", content="x", occurred_at="2026-12-09T09:00")
    assert failed and message.startswith("occurred_at:")
    # And update moves it to a date, then clears it
    failed, moved = tool(api, mind.key, "update", id=stored["id"], occurred_at="2026-12-10")
    assert not failed and moved["occurred_at"] == "2026-12-10"
    _, cleared = tool(api, mind.key, "update", id=stored["id"], occurred_at=None)
    assert cleared["occurred_at"] is None


# ---------------------------------------------------------------- the list's read budget


def test_a_selective_window_list_stops_at_its_read_budget_and_goes_on_from_there(
    api: Api, mind: MindHandle, movable_clock: MovableClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.memory import reads

    # Given many memories in the window, of which only two are projects
    for i in range(12):
        movable_clock.advance(minutes=1)
        store(api, mind, f"note_{i}", category="note")
        if i in (2, 9):
            store(api, mind, f"project_{i}", category="project")
    monkeypatch.setattr(reads, "LIST_READ_BUDGET", 4)
    # When the list is walked with a budget of a few items a request
    keys = every_page(api, mind, "/memory", after="2026-03-01", category="project", limit=1)
    # Then every page is short or empty, but the walk finds exactly the two, newest first
    assert keys == ["project_9", "project_2"]


# ---------------------------------------------------------------- the index of schema 3


def _as_schema_3(generation: Path) -> None:
    """Rewrite a generation as the index format before the memories' times: no time columns."""
    db = sqlite3.connect(generation, isolation_level=None)
    generations.configure(db)
    for column in schema.EVENT_TIME_COLUMNS:
        db.execute(f"ALTER TABLE docs DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '3' WHERE name = 'schema'")
    db.close()


def test_an_index_of_schema_3_answers_windows_meanwhile_and_is_upgraded_in_place(
    api: Api, mind: MindHandle, pump: Pump, index_root: Path, movable_clock: MovableClock
) -> None:
    # Given a mind whose published index is of schema 3 (no times), with a memory dated in December
    december = store(api, mind, "party", "Christmas party", occurred_at="2026-12-24")
    march = store(api, mind, "party_planning", "Party planning")
    pump.run_once()
    folder = index_root / mind.id
    old = generations.current_generation(folder)
    assert old is not None
    _as_schema_3(old)
    # Then a window is still answered right meanwhile (the current record decides for those rows)
    assert keys_of(get(api, mind, "/memory/search", q="party", after="2026-12-01"), "results") == ["party"]
    # When the next change of that mind is indexed
    movable_clock.advance(days=1)
    store(api, mind, "party_food", "Party food: cake", occurred_at="2026-12-24")
    pump.run_once()
    # Then the generation was upgraded in place, and the window holds the old row and the new one
    assert generations.current_generation(folder) == old
    db = generations.open_read_only(old)
    assert schema.schema_of(db) == schema.SCHEMA_VERSION
    db.close()
    found = keys_of(get(api, mind, "/memory/search", q="party", after="2026-12-01"), "results")
    assert sorted(found) == ["party", "party_food"]
    assert keys_of(get(api, mind, "/memory/search", q="party", before="2026-03-01"), "results") == [
        "party_planning"
    ]
    assert december["id"] != march["id"]


# ---------------------------------------------------------------- proposals


def test_an_agent_moving_a_verified_memorys_event_time_makes_a_proposal(api: Api, mind: MindHandle) -> None:
    # Given a memory a person wrote (verified), dated
    memory = store(api, mind, "wedding", "Wedding in Lisbon", occurred_at="2027-06-12")
    path = f"/memory/{memory['id']}"
    # When an agent moves its date
    answer = api.call("PUT", path, json_body={"occurred_at": "2027-06-19"}, **as_agent(mind))
    # Then it waits for review, and the memory keeps the date the person gave
    assert answer.status == 202, answer.text
    proposal = answer.json()["proposal"]
    assert proposal["proposed"]["occurred_at"] == "2027-06-19"
    assert ok(api.call("GET", path, **as_agent(mind)))["occurred_at"] == "2027-06-12"
    # When the person accepts it, Then the memory has the new date
    accepted = ok(api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind)))
    assert accepted["memory"]["occurred_at"] == "2027-06-19"


# ---------------------------------------------------------------- hooks


def test_a_hook_delivery_carries_each_items_occurred_at(api: Api, mind: MindHandle) -> None:
    from tests.integration.test_hooks import create_hook, deliver

    # Given a platform posting conversation turns with the time each was said
    hook = create_hook(api, mind)
    turns = [
        memory_body(
            key="turn_1", content="User: my sister visits on Friday", occurred_at="2026-12-04T18:05:00+01:00"
        ),
        memory_body(key="turn_2", content="User: bad time", occurred_at="2026-12-04T18:06:00"),
    ]
    # When it delivers them
    answer = ok(deliver(api, hook, {"memories": turns}))
    # Then the zoned one is stored in UTC, and the zoneless one is that item's error, naming the field
    stored, refused = answer["results"]
    assert stored["memory"]["occurred_at"] == "2026-12-04T17:05:00.000Z"
    assert refused["status"] == "error" and refused["error"]["details"][0]["field"] == "occurred_at"
