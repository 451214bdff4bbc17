"""Best-match search through the gateway: questions in an agent's own words, coverage first, the
terms each hit matched, inflections and function words, and an index of the old format rebuilt
by the indexer while search keeps answering from it."""

# ruff: noqa: RUF001 (Russian questions)
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from synapse.index import generations, schema

from infra.stream_pump import Pump
from tests.integration.test_search_api import ids, search, store
from tests.support.api import Api, MindHandle
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def results(api: Api, mind: MindHandle, q: str, **params: Any) -> list[dict[str, Any]]:
    answer = search(api, mind, q, **params)
    assert answer.status == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["results"]
    return found


def test_a_question_in_an_agents_words_finds_the_memory(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given ordinary memories
    coffee = store(
        api, mind, category="preference", key="coffee_order", content="Drinks flat white with oat milk"
    )
    office = store(api, mind, key="office", content="Office is in Berlin Kreuzberg, timezone Europe/Berlin")
    daughter = store(
        api, mind, category="identity", key="daughter", content="Daughter Lena was born on 14 March 2019"
    )
    allergy = store(api, mind, key="allergy", content="Allergy to peanuts")
    store(api, mind, key="tea", content="Dislikes green tea")
    pump.run_once()
    # When an agent asks questions that share a word stem with the answer, Then it is the first hit
    asked = {
        "What coffee does he drink?": coffee,
        "What timezone is the office in?": office,
        "When was his daughter born?": daughter,
        "Does the user have any allergies?": allergy,
        "find the note about peanuts": allergy,
    }
    for question, answer in asked.items():
        assert ids(search(api, mind, question))[:1] == [answer["id"]], question


def test_memories_matching_more_terms_rank_first(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given one memory with both words, and others with one of them many times or in the key
    both = store(api, mind, key="build", content="The docker build runs on a long-lived swarm node")
    in_key = store(api, mind, key="docker", content="docker docker docker", tags=["docker"])
    swarm = store(api, mind, key="bees", content="A swarm of bees")
    store(api, mind, key="other", content="Nothing relevant")
    pump.run_once()
    # When both words are asked for
    found = results(api, mind, "docker swarm")
    # Then the memory covering both ranks first, though the others score higher on one word alone
    assert [r["memory"]["id"] for r in found] == [both["id"], in_key["id"], swarm["id"]]
    assert [(r["matched"], r["coverage"]) for r in found] == [
        (["docker", "swarm"], 1.0),
        (["docker"], 0.5),
        (["swarm"], 0.5),
    ]
    assert search(api, mind, "docker swarm").json()["terms"] == ["docker", "swarm"]


def test_coverage_counts_only_the_meaningful_terms(api: Api, mind: MindHandle, pump: Pump) -> None:
    coffee = store(api, mind, key="coffee_order", content="Drinks flat white with oat milk")
    pump.run_once()
    answer = search(api, mind, "What coffee does he drink?").json()
    assert answer["terms"] == ["coffee", "drink"]
    (hit,) = answer["results"]
    assert hit["memory"]["id"] == coffee["id"] and hit["matched"] == ["coffee", "drink"]
    assert hit["coverage"] == 1.0
    assert hit["snippet"] == "**Drinks** flat white with oat milk"  # the content's words, not the key's


def test_inflected_forms_and_possessives_match(api: Api, mind: MindHandle, pump: Pump) -> None:
    allergy = store(api, mind, key="allergy", content="Allergy to shellfish")
    interviews = store(api, mind, key="hiring", content="Interviewing backend candidates this week")
    laptop = store(api, mind, key="laptop", content="The user runs Linux on a ThinkPad")
    pump.run_once()
    assert ids(search(api, mind, "allergies")) == [allergy["id"]]
    assert ids(search(api, mind, "interviewed")) == [interviews["id"]]
    assert ids(search(api, mind, "user's thinkpads")) == [laptop["id"]]


def test_a_query_of_only_function_words_searches_them(api: Api, mind: MindHandle, pump: Pump) -> None:
    song = store(api, mind, key="song", content="Let it be, what is the point")
    pump.run_once()
    found = results(api, mind, "what is the")
    assert [r["memory"]["id"] for r in found] == [song["id"]] and found[0]["coverage"] == 1.0
    punctuation = search(api, mind, "?!")
    assert punctuation.status == 400 and "nothing to search for" in punctuation.json()["error"]["message"]


def test_explicit_operators_keep_their_meaning(api: Api, mind: MindHandle, pump: Pump) -> None:
    swarm = store(api, mind, key="a", content="docker swarm cluster")
    compose = store(api, mind, key="b", content="docker compose file")
    bees = store(api, mind, key="c", content="a swarm of bees")
    pump.run_once()
    assert ids(search(api, mind, "docker AND swarm")) == [swarm["id"]]
    assert ids(search(api, mind, "+docker +swarm")) == [swarm["id"]]
    assert set(ids(search(api, mind, "+docker swarm"))) == {swarm["id"], compose["id"]}
    assert ids(search(api, mind, "+docker swarm"))[0] == swarm["id"]
    assert ids(search(api, mind, "docker swarm NOT bees")) == [swarm["id"], compose["id"]]
    assert ids(search(api, mind, '"swarm of bees"')) == [bees["id"]]
    assert set(ids(search(api, mind, "compose OR bees"))) == {compose["id"], bees["id"]}
    assert ids(search(api, mind, "(compose OR bees) AND file")) == [compose["id"]]


def test_german_and_russian_questions_match_inflected_words(api: Api, mind: MindHandle, pump: Pump) -> None:
    tochter = store(api, mind, key="tochter", content="Meine Tochter Lena ist 2019 geboren")
    kaffee = store(api, mind, key="kaffee", content="Trinkt morgens Kaffee mit Hafermilch")
    doch = store(api, mind, key="doch", content="Дочь Лена родилась в марте")
    pump.run_once()
    assert ids(search(api, mind, "Wann wurde die Tochter geboren?"))[:1] == [tochter["id"]]
    assert ids(search(api, mind, "Welchen Kaffee trinkt er?"))[:1] == [kaffee["id"]]
    assert ids(search(api, mind, "Когда родилась его дочери?"))[:1] == [doch["id"]]


def test_pages_of_a_best_match_query_cover_every_candidate_once(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    stored = [
        store(api, mind, key=f"k{n}", content=("alpha " if n % 2 else "") + f"beta n{n}") for n in range(9)
    ]
    pump.run_once()
    seen, cursor, coverages = [], None, []
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        answer = search(api, mind, "alpha beta", **params).json()
        seen += [r["memory"]["id"] for r in answer["results"]]
        coverages += [r["coverage"] for r in answer["results"]]
        if not (cursor := answer["next_cursor"]):
            break
    assert sorted(seen) == sorted(m["id"] for m in stored)
    assert coverages == sorted(coverages, reverse=True) and coverages[0] == 1.0
    # "beta" is in every memory, so a memory matching it alone covers little of the question
    assert 0 < coverages[-1] < 0.1


def _as_old_format(generation: Path) -> None:
    """Rewrite a generation as the index format before stemming: schema 1, unicode61 alone."""
    db = sqlite3.connect(generation, isolation_level=None)
    generations.configure(db)
    rows = db.execute("SELECT rowid, key, content, tags, raw_key, raw_content, raw_tags FROM fts").fetchall()
    db.execute("DROP TABLE fts")
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(key, content, tags, raw_key UNINDEXED, raw_content UNINDEXED,"
        " raw_tags UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')"
    )
    db.executemany(
        "INSERT INTO fts (rowid, key, content, tags, raw_key, raw_content, raw_tags) VALUES (?,?,?,?,?,?,?)",
        rows,
    )
    db.execute("UPDATE meta SET value = '1' WHERE name = 'schema'")
    db.close()


def test_an_index_of_the_old_format_is_rebuilt_by_the_next_batch(
    api: Api, mind: MindHandle, pump: Pump, index_root: Path
) -> None:
    # Given a mind whose published index is of the format before stemming
    allergy = store(api, mind, key="allergy", content="Allergy to shellfish")
    pump.run_once()
    folder = index_root / mind.id
    old = generations.current_generation(folder)
    assert old is not None
    _as_old_format(old)
    # Then search answers from it meanwhile: exact words match, inflections do not yet
    assert ids(search(api, mind, "allergy")) == [allergy["id"]]
    assert ids(search(api, mind, "allergies", mode="lexical")) == []
    # When the next change of that mind is indexed
    peanuts = store(api, mind, key="peanuts", content="Peanut butter is fine")
    pump.run_once()
    # Then the mind's index was rebuilt from the table in the new format, holding both memories
    new = generations.current_generation(folder)
    assert new is not None and new != old
    db = generations.open_read_only(new)
    assert schema.schema_of(db) == schema.SCHEMA_VERSION
    db.close()
    assert ids(search(api, mind, "allergies", mode="lexical")) == [allergy["id"]]
    assert ids(search(api, mind, "peanuts", mode="lexical")) == [peanuts["id"]]
