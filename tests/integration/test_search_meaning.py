"""Search by meaning and memories that know when they repeat, through the gateway (issue 33): the real
handlers, moto DynamoDB, its stream fed to the real indexer, and the model that ships with Synapse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.integration.test_reads import get
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, assert_error
from tests.support.clock import MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

EVERYDAY = {
    "spouse": "Wife is Anna, married since 2015",
    "dog": "Has a golden retriever named Biscuit",
    "allergy": "Allergic to peanuts, carries an EpiPen",
    "job": "Backend engineer at Acme Corp, mostly Go and Postgres",
    "car": "Drives a 2019 Tesla Model 3",
    "standup": "Team standup at 9:15 on weekdays",
}


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def store(api: Api, mind: MindHandle, **fields: Any) -> dict[str, Any]:
    answer = api.store(mind, **{"category": "fact", **fields})
    assert answer.status in {200, 201}, answer.text
    body: dict[str, Any] = answer.json()
    return body


def search(api: Api, mind: MindHandle, q: str, **params: Any) -> HttpResponse:
    return api.call("GET", "/memory/search", query={"q": q, **params}, **as_agent(mind))


def everyday(api: Api, mind: MindHandle, pump: Pump) -> dict[str, str]:
    ids = {key: store(api, mind, key=key, content=content)["id"] for key, content in EVERYDAY.items()}
    pump.run_once()
    return ids


def test_a_paraphrase_finds_its_memory(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given everyday facts, each stored once
    ids = everyday(api, mind, pump)
    # When questions that share no word with them are asked
    for question, key in (
        ("Who is his partner?", "spouse"),
        ("Does he own a pet?", "dog"),
        ("Which nuts should he avoid?", "allergy"),
        ("What does he do for a living?", "job"),
        ("What vehicle does he own?", "car"),
    ):
        answer = search(api, mind, question)
        # Then the memory that answers comes first, with its similarity, ranked by both sides
        assert answer.status == 200, answer.text
        body = answer.json()
        assert body["mode"] == "hybrid", body
        first = body["results"][0]
        assert first["memory"]["id"] == ids[key], (question, [r["memory"]["key"] for r in body["results"]])
        # (over the floor of 0.2 under which meaning counts nothing: 0.29-0.46 here)
        assert first["similarity"] > 0.25 and first["memory"]["updated_at"]


def test_lexical_mode_and_explicit_syntax_match_words_only(api: Api, mind: MindHandle, pump: Pump) -> None:
    everyday(api, mind, pump)
    lexical = search(api, mind, "Who is his partner?", mode="lexical").json()
    assert lexical["mode"] == "lexical" and lexical["results"] == []
    phrase = search(api, mind, '"golden retriever"').json()
    assert phrase["mode"] == "lexical" and [r["similarity"] for r in phrase["results"]] == [None]
    semantic = search(api, mind, "canine companion", mode="semantic").json()
    assert semantic["mode"] == "semantic" and semantic["results"][0]["memory"]["key"] == "dog"


def test_an_unknown_mode_is_a_400_naming_the_field(api: Api, mind: MindHandle, index_root: Path) -> None:
    assert_error(search(api, mind, "anything", mode="fuzzy"), 400, field="mode", rule="enum")


def test_a_lexical_exact_hit_ranks_above_what_is_only_near_in_meaning(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    # Given one memory holding the question's words, and several that are close to it in meaning
    exact = store(api, mind, key="atlas_invoice", content="Atlas invoice 4471 is overdue")
    for n, content in enumerate(
        [
            "Owes the landlord two months of rent",
            "Late on the electricity bill",
            "Missed the car loan payment",
        ]
    ):
        store(api, mind, key=f"debt_{n}", content=content)
    pump.run_once()
    # When asked with a page of one
    answer = search(api, mind, "Which payments is he late on for Atlas invoice?", limit=1)
    # Then the exact hit has that place, and the same place on a page of 10
    assert [r["memory"]["id"] for r in answer.json()["results"]] == [exact["id"]]
    wider = search(api, mind, "Which payments is he late on for Atlas invoice?", limit=10)
    assert wider.json()["results"][0]["memory"]["id"] == exact["id"]


def test_one_shared_word_does_not_beat_a_clear_meaning_match(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given the everyday facts and an address that shares the word "living" with the question
    ids = everyday(api, mind, pump)
    elm = store(api, mind, key="address", content="Lives at 14 Elm Street with a small garden")["id"]
    pump.run_once()
    # When asked what he does for a living
    results = search(api, mind, "What does he do for a living?").json()["results"]
    order = [r["memory"]["id"] for r in results]
    # Then the job comes first, above the address
    assert order[0] == ids["job"], [r["memory"]["key"] for r in results]
    assert elm not in order or order.index(elm) > 0
    # And the scores never rise down the page
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


def test_relevance_says_strong_for_an_answer_and_weak_when_the_mind_has_none(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    # Given the everyday facts
    ids = everyday(api, mind, pump)
    # When asked what they answer, in other words, the answer is strong
    first = search(api, mind, "Who is his partner?").json()["results"][0]
    assert (first["memory"]["id"], first["relevance"]) == (ids["spouse"], "strong")
    # And a question they hold no answer to gets no strong hit
    none = search(api, mind, "Where did he go to university?").json()["results"]
    assert all(r["relevance"] == "weak" for r in none), none


def test_a_near_duplicate_write_names_the_memory_it_repeats(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given a fact in the mind's index
    tesla = store(api, mind, key="car", content="Drives a 2019 Tesla Model 3")
    store(api, mind, key="standup", content="Team standup at 9:15 on weekdays")
    pump.run_once()
    # When an agent stores its update under another key
    bmw = store(api, mind, key="new_car", content="Drives a 2024 BMW i4 now; sold the Tesla")
    # Then the answer names the memory it repeats
    assert [(s["id"], s["key"], s["relation"]) for s in bmw["similar"]] == [(tesla["id"], "car", "related")]
    assert 0.6 <= bmw["similar"][0]["similarity"] <= 1
    # And an unrelated fact gets no such hint
    unrelated = store(api, mind, key="allergy", content="Allergic to peanuts, carries an EpiPen")
    assert "similar" not in unrelated
    # And once both are indexed, the newer of the two ranks first
    pump.run_once()
    found = search(api, mind, "Which car does he drive?").json()["results"]
    assert [r["memory"]["id"] for r in found[:2]] == [bmw["id"], tesla["id"]]


def test_a_batch_item_that_repeats_a_memory_says_so(api: Api, mind: MindHandle, pump: Pump) -> None:
    dog = store(api, mind, key="dog", content="Has a golden retriever named Biscuit")
    pump.run_once()
    answer = api.call(
        "POST",
        "/memory/batch",
        json_body={"memories": [
            {"category": "fact", "key": "pet", "content": "Their dog Biscuit is a golden retriever"},
            {"category": "fact", "key": "shoe", "content": "Shoe size 44 EU"},
        ]},
        **as_agent(mind),
    )  # fmt: skip
    assert answer.status == 200, answer.text
    first, second = answer.json()["results"]
    assert [s["id"] for s in first["similar"]] == [dog["id"]]
    assert "similar" not in second


def test_mcp_remember_says_which_memory_a_write_repeats(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given a fact stored through MCP, content alone, and indexed
    first = mcp_tool(api, mind, "remember", content="Drives a 2019 Tesla Model 3")
    pump.run_once()
    # When its update is remembered as new content (so under another derived key)
    again = mcp_tool(api, mind, "remember", content="Drives a 2024 BMW i4 now; sold the Tesla")
    # Then the answer names the memory, in words the model acts on, and shows when it was written
    assert [s["id"] for s in again["similar"]] == [first["id"]]
    assert again["note"].startswith(
        f"This may replace memories the mind already holds: key {first['key']} (id {first['id']}, related"
    )
    assert "passing that id in `supersedes`" in again["note"]
    # with the older memory's own words, which the model needs to judge a guessed relation
    assert again["similar"][0]["content"] == "Drives a 2019 Tesla Model 3"
    assert ': "Drives a 2019 Tesla Model 3"' in again["note"]
    assert again["updated_at"]
    # And search hits show their date and similarity
    pump.run_once()
    hits = mcp_tool(api, mind, "search", query="Which car does he drive?")["results"]
    assert hits[0]["id"] == again["id"] and hits[0]["updated_at"] and hits[0]["similarity"] is not None


def mcp_tool(api: Api, mind: MindHandle, name: str, **arguments: Any) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = api.call(
        "POST",
        "/mcp",
        token=mind.key,
        raw_body=json.dumps(message).encode(),
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
    )
    assert answer.status == 200, answer.text
    result = answer.json()["result"]
    assert not result["isError"], result
    return json.loads(result["content"][0]["text"])


def test_a_newer_value_ranks_above_the_fact_it_updates_in_search_and_in_recall(
    api: Api, mind: MindHandle, pump: Pump, moved: MovableClock
) -> None:
    # Given a phone number, then weeks later its newer value under another key, naming nothing; the
    # older one matches more of the question's words
    older = store(api, mind, key="phone", content="Phone number is 555-0142")
    store(api, mind, key="standup", content="Team standup at 9:15 on weekdays")
    moved.advance(days=30)
    newer = store(api, mind, key="mobile_number", content="New mobile number: 555-0199")
    pump.run_once()
    # When asked for his phone number
    found = search(api, mind, "What is his phone number?").json()["results"]
    ranked = [r["memory"]["id"] for r in found]
    # Then the newer value comes right above the older one, as strong as it
    assert ranked.index(newer["id"]) + 1 == ranked.index(older["id"]), ranked
    assert found[ranked.index(newer["id"])]["relevance"] == found[ranked.index(older["id"])]["relevance"]
    # And recall's memories relevant to the question follow the same order
    relevant = get(api, mind, "/memory/recall", format="json", q="What is his phone number?").json()[
        "relevant"
    ]
    assert relevant.index(newer["id"]) < relevant.index(older["id"]), relevant
