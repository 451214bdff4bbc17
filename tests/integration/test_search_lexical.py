"""The lexical side of search on the words as written and on conversation logs: prefixes and
phrases match what was typed (the index keeps the words unstemmed beside the stems), an index of the
previous format is upgraded in place while it answers, a word in nearly every memory weighs little
in coverage, and a hyphenated compound matches memories holding either of its words."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from synapse.index import generations, schema

from infra.stream_pump import Pump
from tests.integration.test_best_match import results
from tests.integration.test_search_api import ids, search, store
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


# ---------------------------------------------------------------- prefixes and phrases as written


def test_a_prefix_matches_the_words_it_starts(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given memories whose words the stemmer cuts differently from what a user types
    swarm = store(api, mind, key="swarm", content="Docker swarm deployment")
    deploying = store(api, mind, key="ci", content="Deploying from CI every night")
    store(api, mind, key="other", content="Nothing relevant")
    pump.run_once()
    # When prefixes are searched, Then they match the words as written (porter made deploy* deploi*)
    assert set(ids(search(api, mind, "deploy*"))) == {swarm["id"], deploying["id"]}
    assert ids(search(api, mind, "deploym*")) == [swarm["id"]]
    assert ids(search(api, mind, "docker deploym*"))[:1] == [swarm["id"]]
    (hit,) = results(api, mind, "deploym*")
    assert hit["snippet"] == "Docker swarm **deployment**" and hit["matched"] == ["deploym*"]


def test_a_phrase_matches_the_words_as_written(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given two memories whose words share stems ("deployment" and "deployments" are both `deploy`)
    exact = store(api, mind, key="a", content="The swarm deployment is green")
    store(api, mind, key="b", content="The swarm deployments run nightly")
    pump.run_once()
    # When the phrase is searched, Then only the memory saying it as written matches
    assert ids(search(api, mind, '"swarm deployment"')) == [exact["id"]]
    # And a plain word still matches every inflection
    assert len(ids(search(api, mind, "deployments"))) == 2


def test_prefixes_and_phrases_match_in_every_script(api: Api, mind: MindHandle, pump: Pump) -> None:
    schafer = store(api, mind, key="neighbour", content="Nachbar Jürgen Schäfer, Geburtstag im Mai")
    tochter = store(api, mind, key="daughter", content="Дочь Лена родилась в марте")
    pump.run_once()
    assert ids(search(api, mind, "schaf*")) == [schafer["id"]]
    assert ids(search(api, mind, '"Jürgen Schafer"')) == [schafer["id"]]
    assert ids(search(api, mind, "родил*")) == [tochter["id"]]


def _as_schema_2(generation: Path) -> None:
    """Rewrite a generation as the index format before the words as written: no `fts_exact`."""
    db = sqlite3.connect(generation, isolation_level=None)
    generations.configure(db)
    db.execute(f"DROP TABLE {schema.EXACT_WORDS_TABLE}")
    db.execute("UPDATE meta SET value = '2' WHERE name = 'schema'")
    db.close()


def test_an_index_of_schema_2_answers_meanwhile_and_is_upgraded_in_place(
    api: Api, mind: MindHandle, pump: Pump, index_root: Path
) -> None:
    # Given a mind whose published index is of schema 2 (stems only)
    swarm = store(api, mind, key="swarm", content="Docker swarm deployment")
    pump.run_once()
    folder = index_root / mind.id
    old = generations.current_generation(folder)
    assert old is not None
    _as_schema_2(old)
    # Then search answers from it meanwhile, prefixes on the stems as before (deploym* finds nothing)
    assert ids(search(api, mind, "swarm")) == [swarm["id"]]
    assert ids(search(api, mind, "deploym*")) == []
    # When the next change of that mind is indexed
    ci = store(api, mind, key="ci", content="Deploying from CI")
    pump.run_once()
    # Then the generation was upgraded in place (the same base, no rebuild from the table), and
    # prefixes match the words as written, for the old memory and the new one
    assert generations.current_generation(folder) == old
    db = generations.open_read_only(old)
    assert schema.schema_of(db) == schema.SCHEMA_VERSION and schema.has_exact_words(db)
    db.close()
    assert ids(search(api, mind, "deploym*")) == [swarm["id"]]
    assert set(ids(search(api, mind, "deploy*"))) == {swarm["id"], ci["id"]}


def test_words_as_written_follow_updates_and_deletes(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given a memory indexed, then updated, and another deleted
    kept = store(api, mind, key="kept", content="Kubernetes deployment")
    gone = store(api, mind, key="gone", content="Deployment notes")
    pump.run_once()
    store(api, mind, key="kept", content="Kubernetes rollout")
    assert api.call("DELETE", f"/memory/{gone['id']}", **as_user(mind)).status == 204
    pump.run_once()
    # Then the words as written are those of the current text only
    assert ids(search(api, mind, "deploym*")) == []
    assert ids(search(api, mind, "rollo*")) == [kept["id"]]


# ---------------------------------------------------------------- conversation logs


def test_a_turn_matching_only_the_speakers_names_ranks_below_a_rarer_word(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    # Given a conversation log: every turn carries its speaker's name in its content and tags
    lines = [
        "Caroline: Melanie, good morning!",
        "Melanie: Morning Caroline, how are the kids?",
        *(f"Caroline: Day {n}, busy at the office again." for n in range(8)),
        *(f"Melanie: Day {n}, painting in the garden again." for n in range(8)),
    ]
    turns = [
        store(api, mind, key=f"d1_{n}", content=text, tags=[text.split(":")[0].lower()])
        for n, text in enumerate(lines)
    ]
    paperwork = store(api, mind, key="d2_1", content="Jon: The adoption paperwork arrived", tags=["jon"])
    pump.run_once()
    # When a question names both speakers and one rarer word (lexical ranking: hybrid lets a turn
    # close in meaning rise too, tests/integration/test_search_meaning.py)
    found = results(api, mind, "What did Caroline and Melanie say about the adoption?", mode="lexical")
    # Then the turn holding the rarer word ranks above the turns holding only the names, though
    # they match more of the question's terms (two names against one word)
    order = [r["memory"]["id"] for r in found]
    assert order[0] == paperwork["id"] and set(order[1:3]) == {turns[0]["id"], turns[1]["id"]}
    by_id = {r["memory"]["id"]: r for r in found}
    assert by_id[paperwork["id"]]["matched"] == ["adoption"]
    assert by_id[turns[0]["id"]]["matched"] == ["caroline", "melanie"]
    assert by_id[turns[0]["id"]]["coverage"] < by_id[paperwork["id"]]["coverage"]


def test_a_hyphenated_compound_matches_either_of_its_words(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given turns saying "transgender" alone, the compound, and neither
    support = store(api, mind, key="a", content="Caroline: I went to a transgender support group")
    compound = store(api, mind, key="b", content="Caroline: the clinic offers transgender-specific care")
    store(api, mind, key="c", content="Caroline: hiking boots are on sale")
    pump.run_once()
    # When a question carries the compound
    answer = search(api, mind, "What transgender-specific care is there?").json()
    # Then both turns holding its words match, the one with the compound (more of the question) first
    assert answer["terms"] == ["transgender", "specific", "care"]
    assert [r["memory"]["id"] for r in answer["results"]] == [compound["id"], support["id"]]
    # And the compound in quotes keeps its phrase meaning
    assert ids(search(api, mind, '"transgender-specific"')) == [compound["id"]]
