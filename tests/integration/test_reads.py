"""GET /memory/recall, /memory/by-tag and /memory/expiring through the gateway, against moto."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.storage import tables

from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.clock import EXPIRY_START, MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.recall import SPEC_EXAMPLE

T0 = EXPIRY_START


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def iso(moment: datetime) -> str:
    return clock.to_iso(moment)


def store(
    api: Api, mind: MindHandle, moved: MovableClock, *, as_agent: bool = False, **fields: Any
) -> dict[str, Any]:
    """Store one memory one second after the last, so recall order is the order of writes."""
    moved.advance(seconds=1)
    answer = api.store(mind, as_agent=as_agent, **fields)
    assert answer.status in (200, 201), answer.text
    body: dict[str, Any] = answer.json()
    return body


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> Any:
    answer = api.call("GET", path, query=query, **as_agent(mind))
    assert answer.status == 200, answer.text
    return answer


def recall_keys(api: Api, mind: MindHandle, **query: Any) -> list[str]:
    body = get(api, mind, "/memory/recall", format="json", **query).json()
    return [m["key"] for m in body["memories"]]


def listed_keys(api: Api, mind: MindHandle, path: str, **query: Any) -> list[str]:
    """Every page of a paginated read, in order."""
    keys: list[str] = []
    cursor = None
    while True:
        body = get(api, mind, path, **query, **({"cursor": cursor} if cursor else {})).json()
        keys += [m["key"] for m in body["memories"]]
        cursor = body["next_cursor"]
        if cursor is None:
            return keys


def build_example_mind(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    """SPEC §4's mind, written oldest first: nine more memories (one by an agent), then the three shown."""
    for i in range(1, 8):
        store(api, mind, moved, key=f"fact_{i}", content=f"Fact {i}", as_agent=i == 4)
    for key in ("older_note", "old_note"):
        store(api, mind, moved, category="note", key=key, content="Old", priority="low")
    store(
        api,
        mind,
        moved,
        as_agent=True,
        category="project",
        key="synapse_status",
        content="v1.5.0 deployed, working on v1.6.0 docs",
        tags=["synapse", "deployment"],
        priority="high",
    )
    store(
        api,
        mind,
        moved,
        category="preference",
        key="communication_style",
        content="Prefers concise technical responses",
        tags=["communication"],
        priority="high",
    )
    store(
        api,
        mind,
        moved,
        category="identity",
        key="user_name",
        content="Michael Schäfer",
        tags=["person", "identity"],
        priority="critical",
    )


# ---------------------------------------------------------------- recall


def test_recall_of_the_spec_example_mind_is_byte_for_byte(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given SPEC §4's mind
    build_example_mind(api, mind, moved)
    # When an agent recalls it
    answer = get(api, mind, "/memory/recall")
    # Then the text is plain UTF-8 and starts exactly as the example
    assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.body.decode("utf-8").startswith(
        SPEC_EXAMPLE + "\n[004] fact (NORMAL) [verified]\n  fact_7\n"
    )
    # And the person addressing the mind with X-Mind-Id sees the same text
    assert api.call("GET", "/memory/recall", **as_user(mind)).text == answer.text


def test_recall_shows_keys_people_or_agents_chose_and_not_those_derived_from_content(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a note stored from its content alone (its key derived), and one under a chosen key
    moved.advance(seconds=1)
    derived = api.call("POST", "/memory", json_body={"content": "Walks to work"}, **as_agent(mind)).json()
    store(api, mind, moved, category="note", key="commute", content="Cycles when it is dry")
    # When recalled
    text = get(api, mind, "/memory/recall").text
    # Then the chosen key has its line and the derived one none; the content speaks for itself
    assert text.endswith(
        "\n[001] note (NORMAL) [verified]\n  commute\n  Cycles when it is dry\n"
        "\n[002] note (NORMAL) [unverified]\n  Walks to work\n"
    ), text
    assert derived["key"] not in text
    # And JSON still carries every key, saying which was derived
    listed = get(api, mind, "/memory/recall", format="json").json()["memories"]
    assert [(m["key"], m["key_derived"]) for m in listed] == [("commute", False), (derived["key"], True)]


def test_recall_order_is_priority_then_most_recently_updated(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    for key, priority in [("a", "low"), ("b", "normal"), ("c", "critical"), ("d", "normal"), ("e", "high")]:
        store(api, mind, moved, key=key, priority=priority)
    assert recall_keys(api, mind) == ["c", "e", "d", "b", "a"]
    # When `b` is updated it becomes the most recent normal memory
    moved.advance(seconds=1)
    mem_b = api.call("GET", "/memory", query={"limit": 100}, **as_agent(mind)).json()["memories"]
    b_id = next(m["id"] for m in mem_b if m["key"] == "b")
    assert api.call("PUT", f"/memory/{b_id}", json_body={"content": "new"}, **as_user(mind)).status == 200
    assert recall_keys(api, mind) == ["c", "e", "b", "d", "a"]


def test_recall_filters_by_categories_and_tag_and_counts_after_filters(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    store(api, mind, moved, category="fact", key="f1", tags=["Docker"], priority="low")
    store(api, mind, moved, category="project", key="p1", tags=["docker", "aws"])
    store(api, mind, moved, category="skill", key="s1", tags=["aws"], as_agent=True)
    store(api, mind, moved, category="fact", key="f2", priority="high")
    store(api, mind, moved, category="project", key="p2", tags=["docker"], priority="critical")
    # Several categories merge in recall order
    assert recall_keys(api, mind, category=["fact", "project"]) == ["p2", "f2", "p1", "f1"]
    assert recall_keys(api, mind, category="fact, skill") == ["f2", "s1", "f1"]
    # A tag, case-insensitive, alone or with a category
    assert recall_keys(api, mind, tag="DOCKER") == ["p2", "p1", "f1"]
    assert recall_keys(api, mind, tag="docker", category="fact") == ["f1"]
    assert recall_keys(api, mind, tag="aws", category=["skill", "project"]) == ["s1", "p1"]
    # And the header counts what the filters select
    text = get(api, mind, "/memory/recall", tag="aws").text
    assert text.splitlines()[1] == "Memories: 2 total (1 verified, 1 unverified)"
    text = get(api, mind, "/memory/recall", category="identity").text
    assert text == "Mind: Michael's Mind\nMemories: 0 total (0 verified, 0 unverified)\n"


def test_recall_json_is_the_same_selection_and_order_as_the_text(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    build_example_mind(api, mind, moved)
    text = get(api, mind, "/memory/recall", limit=4).text
    body = get(api, mind, "/memory/recall", limit=4, format="json").json()
    shown = [line.split("\n")[1].strip() for line in text.split("\n\n")[1:] if line.startswith("[")]
    assert (
        [m["key"] for m in body["memories"]]
        == shown
        == ["user_name", "communication_style", "synapse_status", "fact_7"]
    )
    assert body["low_priority"] == {"count": 2, "keys": []}
    assert body["left_out"] == 8 and "8 more memories left out; GET /memory/search finds them." in text
    assert (body["total"], body["verified"], body["unverified"]) == (12, 10, 2)


def test_recall_budget_parameters(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    build_example_mind(api, mind, moved)
    full = get(api, mind, "/memory/recall").text
    at_budget = get(api, mind, "/memory/recall", max_chars=len(full)).text
    over = get(api, mind, "/memory/recall", max_chars=len(full) - 1).text
    assert at_budget == full
    assert len(over) < len(full) and "Low priority, not shown in full (2): old_note, older_note\n" in over


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"max_chars": "499"}, "max_chars"),
        ({"max_chars": "400001"}, "max_chars"),
        ({"format": "xml"}, "format"),
        ({"category": "bogus"}, "category"),
        ({"category": ""}, "category"),
        ({"tag": "   "}, "tag"),
        ({"tag": "x" * 65}, "tag"),
    ],
)
def test_recall_refuses_bad_parameters_with_400(
    api: Api, mind: MindHandle, query: dict[str, str], field: str
) -> None:
    assert_error(api.call("GET", "/memory/recall", query=query, **as_agent(mind)), 400, field=field)


def test_recall_needs_a_credential(api: Api) -> None:
    assert_error(api.call("GET", "/memory/recall"), 401)


# ---------------------------------------------------------------- expiry


def test_an_expired_memory_leaves_recall_and_by_tag_but_stays_readable_by_id(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a memory that expires in an hour, beside one that does not
    store(api, mind, moved, key="stays", tags=["docker"])
    gone = store(api, mind, moved, key="goes", tags=["docker"], expires_at=iso(moved.at + timedelta(hours=1)))
    assert recall_keys(api, mind) == ["goes", "stays"]
    # When the hour has passed
    moved.advance(hours=1)
    # Then recall and by-tag leave it out, and the header no longer counts it
    assert recall_keys(api, mind) == ["stays"]
    assert recall_keys(api, mind, tag="docker") == ["stays"]
    assert (
        get(api, mind, "/memory/recall").text.splitlines()[1]
        == "Memories: 1 total (1 verified, 0 unverified)"
    )
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker") == ["stays"]
    # But by-tag with include_expired=true, and a read by id, still find it
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker", include_expired="true") == ["goes", "stays"]
    by_id = get(api, mind, f"/memory/{gone['id']}").json()
    assert by_id["expired"] is True and by_id["key"] == "goes"


def test_a_memory_that_expired_before_the_year_1000_is_expired_everywhere(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a memory whose expires_at lies in the first millennium: stored then, a moment before it
    # (a write's expiry may not be in the past), and the clock back to today
    moved.at = datetime(998, 12, 31, 23, 59, tzinfo=UTC)
    gone = store(api, mind, moved, key="ancient", tags=["docker"], expires_at="0999-01-01T00:00:00Z")
    moved.at = T0
    store(api, mind, moved, key="stays", tags=["docker"])
    # When recall, by-tag and expiring read the mind
    # Then it is left out of all three and its read by id says expired
    assert recall_keys(api, mind) == ["stays"]
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker") == ["stays"]
    assert listed_keys(api, mind, "/memory/expiring", within="365d") == []
    by_id = get(api, mind, f"/memory/{gone['id']}").json()
    assert by_id["expired"] is True and by_id["expires_at"] == "0999-01-01T00:00:00.000Z"


def test_expiring_window_boundaries_on_both_ends(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    # Given memories expiring around the edges of the default 7-day window, written before `now`
    now = T0 + timedelta(hours=1)
    edges = {
        "at_now": now,
        "just_after_now": now + timedelta(milliseconds=1),
        "in_a_day": now + timedelta(days=1),
        "at_seven_days": now + timedelta(days=7),
        "just_past_seven_days": now + timedelta(days=7, milliseconds=1),
    }
    for key, moment in edges.items():
        store(api, mind, moved, key=key, expires_at=iso(moment))
    store(api, mind, moved, key="never")
    # When `now` comes
    moved.at = now
    # Then now < expires_at <= now + 7d, soonest first
    assert listed_keys(api, mind, "/memory/expiring") == ["just_after_now", "in_a_day", "at_seven_days"]
    assert listed_keys(api, mind, "/memory/expiring", within="7d") == [
        "just_after_now",
        "in_a_day",
        "at_seven_days",
    ]
    # And a 24h window ends at exactly one day
    assert listed_keys(api, mind, "/memory/expiring", within="24h") == ["just_after_now", "in_a_day"]
    assert listed_keys(api, mind, "/memory/expiring", within="1439m") == ["just_after_now"]
    # And the memory expiring at `now` is already expired
    assert "at_now" not in recall_keys(api, mind) and "just_after_now" in recall_keys(api, mind)


def test_expiring_paginates_soonest_first(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    for hours in (5, 1, 4, 2, 3):
        store(api, mind, moved, key=f"in_{hours}h", expires_at=iso(T0 + timedelta(hours=hours)))
    first = get(api, mind, "/memory/expiring", limit=2).json()
    assert [m["key"] for m in first["memories"]] == ["in_1h", "in_2h"] and first["next_cursor"]
    assert listed_keys(api, mind, "/memory/expiring", limit=2) == [
        "in_1h",
        "in_2h",
        "in_3h",
        "in_4h",
        "in_5h",
    ]


def test_an_expiring_cursor_survives_its_memory_expiring(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    for minutes in (10, 20, 30):
        store(api, mind, moved, key=f"in_{minutes}m", expires_at=iso(T0 + timedelta(minutes=minutes)))
    first = get(api, mind, "/memory/expiring", limit=1).json()
    assert [m["key"] for m in first["memories"]] == ["in_10m"]
    # When the memory the cursor points after expires before the next page is asked for
    moved.at = T0 + timedelta(minutes=15)
    second = get(api, mind, "/memory/expiring", limit=1, cursor=first["next_cursor"]).json()
    assert [m["key"] for m in second["memories"]] == ["in_20m"]


@pytest.mark.parametrize(
    "within", ["7", "7D", "0d", "366d", "53w", "8761h", "1y", "-1d", " 7d", "7.5d", "", "7d7d"]
)
def test_expiring_refuses_any_other_within_with_the_accepted_form(
    api: Api, mind: MindHandle, within: str
) -> None:
    answer = api.call("GET", "/memory/expiring", query={"within": within}, **as_agent(mind))
    error = assert_error(answer, 400, field="within")
    assert "m, h, d or w" in error["message"] and "365d" in error["message"]


@pytest.mark.parametrize("within", ["1m", "30m", "24h", "7d", "2w", "365d", "52w", "8760h", "525600m"])
def test_expiring_accepts_every_documented_within(api: Api, mind: MindHandle, within: str) -> None:
    assert get(api, mind, "/memory/expiring", within=within).json() == {"memories": [], "next_cursor": None}


# ---------------------------------------------------------------- by-tag


def test_by_tag_is_case_insensitive_in_recall_order_and_paginated(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    store(api, mind, moved, key="a", tags=["Docker"], priority="low")
    store(api, mind, moved, key="b", tags=["docker", "aws"])
    store(api, mind, moved, key="c", tags=["aws"])
    store(api, mind, moved, key="d", tags=["DOCKER"], priority="critical")
    store(api, mind, moved, key="e", tags=["docker"], category="project")
    assert listed_keys(api, mind, "/memory/by-tag", tag="  DoCkEr ") == ["d", "e", "b", "a"]
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker", limit=1) == ["d", "e", "b", "a"]
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker", category="fact", limit=1) == ["d", "b", "a"]
    page = get(api, mind, "/memory/by-tag", tag="docker", limit=4).json()
    assert len(page["memories"]) == 4 and page["next_cursor"] is None
    assert get(api, mind, "/memory/by-tag", tag="dock").json() == {"memories": [], "next_cursor": None}


def test_a_tag_that_is_a_prefix_of_another_never_matches_it(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    store(api, mind, moved, key="a", tags=["c#"])
    store(api, mind, moved, key="b", tags=["c"])
    assert listed_keys(api, mind, "/memory/by-tag", tag="c") == ["b"]
    assert listed_keys(api, mind, "/memory/by-tag", tag="c#") == ["a"]
    assert recall_keys(api, mind, tag="c") == ["b"]


def test_by_tag_cursor_is_bound_to_its_query_and_mind(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    for key in ("a", "b"):
        store(api, mind, moved, key=key, tags=["docker", "aws"])
    cursor = get(api, mind, "/memory/by-tag", tag="docker", limit=1).json()["next_cursor"]
    other_query = api.call("GET", "/memory/by-tag", query={"tag": "aws", "cursor": cursor}, **as_agent(mind))
    assert_error(other_query, 400, field="cursor")
    other = api.create_mind(user="user-2", name="Other")
    foreign = api.call("GET", "/memory/by-tag", query={"tag": "docker", "cursor": cursor}, **as_agent(other))
    assert_error(foreign, 400, field="cursor")
    assert_error(
        api.call("GET", "/memory/by-tag", query={"tag": "docker", "cursor": "x.y"}, **as_agent(mind)), 400
    )


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({}, "tag"),
        ({"tag": ""}, "tag"),
        ({"tag": "a", "limit": "0"}, "limit"),
        ({"tag": "a", "limit": "101"}, "limit"),
        ({"tag": "a", "include_expired": "yes"}, "include_expired"),
        ({"tag": "a", "category": "nope"}, "category"),
    ],
)
def test_by_tag_refuses_bad_parameters(api: Api, mind: MindHandle, query: dict[str, str], field: str) -> None:
    assert_error(api.call("GET", "/memory/by-tag", query=query, **as_agent(mind)), 400, field=field)


def test_reads_never_cross_minds(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    other = api.create_mind(user="user-2", name="Other")
    store(api, other, moved, key="secret", tags=["docker"], expires_at=iso(T0 + timedelta(days=1)))
    assert recall_keys(api, mind) == []
    assert listed_keys(api, mind, "/memory/by-tag", tag="docker") == []
    assert listed_keys(api, mind, "/memory/expiring") == []
    # A person naming another user's mind gets 404, as for a mind that does not exist
    answer = api.call("GET", "/memory/recall", token=mind.jwt, headers={"X-Mind-Id": other.id})
    assert_error(answer, 404)


# ---------------------------------------------------------------- cost


def test_each_read_costs_what_it_returns_not_the_size_of_the_mind(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a mind of 300 memories, 10 tagged `rare`, 5 expiring this week, 60 low, 30 expired
    for i in range(300):
        fields: dict[str, Any] = {"key": f"m_{i}", "priority": "low" if i % 5 == 0 else "normal"}
        if i % 30 == 1:
            fields["tags"] = ["rare"]
        if i % 60 == 2:
            fields["expires_at"] = iso(T0 + timedelta(days=3))
        if i % 10 == 3:  # expired by the day after: stored with a future expiry, as writes must be
            fields["expires_at"] = iso(T0 + timedelta(hours=1))
        store(api, mind, moved, **fields)
    moved.at = T0 + timedelta(days=1)

    def cost(path: str, **query: Any) -> tuple[int, int]:
        before = sum(tables.reads.values())
        body = get(api, mind, path, **query).json()
        return sum(tables.reads.values()) - before, len(body["memories"])

    # Then each read's items are bounded by what it returns (plus the 30 expired recall subtracts)
    read, returned = cost("/memory/recall", limit=20, format="json")
    assert returned == 20 and read <= 2 * returned + 30 + 20
    read, returned = cost("/memory/by-tag", tag="rare", limit=100)
    assert returned == 10 and read <= 2 * returned + 20
    read, returned = cost("/memory/expiring")
    assert returned == 5 and read <= 2 * returned + 20


def test_recall_merging_categories_reads_little_more_than_it_shows(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given 160 memories spread over four categories
    categories = ["fact", "project", "skill", "note"]
    for i in range(160):
        store(api, mind, moved, key=f"m_{i}", category=categories[i % 4])
    # When recall merges the four categories' streams with limit 10
    before = sum(tables.reads.values())
    keys = recall_keys(api, mind, category=categories, limit=10)
    read = sum(tables.reads.values()) - before
    # Then it shows the ten most recent, having read a small multiple of that (not 160)
    assert keys == [f"m_{i}" for i in range(159, 149, -1)]
    assert read <= 2 * 10 + 20


def test_a_full_page_reads_one_item_more_than_it_returns(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given 150 memories with the tag and a week to live
    for i in range(150):
        store(
            api, mind, moved, key=f"m_{i}", tags=["docker"], expires_at=iso(T0 + timedelta(days=1, minutes=i))
        )
    for path, query in [("/memory/by-tag", {"tag": "docker"}), ("/memory/expiring", {})]:
        # When the first page of 100 is read
        before = sum(tables.reads.values())
        page = get(api, mind, path, limit=100, **query).json()
        read = sum(tables.reads.values()) - before
        # Then one more item than the page was read (to know that more exist), plus the mind, plus the
        # Mind Key's creator's member item (the authorizer's tenure check)
        assert len(page["memories"]) == 100 and page["next_cursor"]
        assert read <= 101 + 1 + 1, path
