"""GET /memory/search through the gateway: the real handlers, moto DynamoDB, its stream fed to the real
indexer by the local pump, and a temp folder as EFS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from synapse.core import clock
from synapse.index import generations

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

LEAK_MARKERS = ("traceback", "fts5", "sqlite", "syntax error", 'file "', "operationalerror")


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def store(api: Api, mind: MindHandle, **fields: Any) -> dict[str, Any]:
    answer = api.store(mind, **fields)
    assert answer.status in {200, 201}, answer.text
    body: dict[str, Any] = answer.json()
    return body


def search(api: Api, mind: MindHandle, q: str, **params: Any) -> HttpResponse:
    return api.call("GET", "/memory/search", query={"q": q, **params}, **as_agent(mind))


def ids(answer: HttpResponse) -> list[str]:
    assert answer.status == 200, answer.text
    return [r["memory"]["id"] for r in answer.json()["results"]]


# ---------------------------------------------------------------- matching


def test_schafer_finds_schafer_with_umlaut_in_any_case(api: Api, mind: MindHandle, pump: Pump) -> None:
    # Given a memory written with an umlaut
    schafer = store(api, mind, category="identity", key="user_name", content="Michael Schäfer")
    store(api, mind, key="other", content="Something else entirely")
    pump.run_once()
    # When it is searched without the diacritic, or in capitals, or with it
    for q in ("schafer", "SCHAFER", "Schäfer", "schäf*"):
        # Then it is found
        assert ids(search(api, mind, q)) == [schafer["id"]], q


def test_diacritics_fold_in_other_scripts(api: Api, mind: MindHandle, pump: Pump) -> None:
    café = store(api, mind, key="cafe", content="Le café près de la gare; Ёлка; Ελληνικά")
    pump.run_once()
    for q in ("cafe", "pres", "елка", "ελληνικα"):
        assert ids(search(api, mind, q)) == [café["id"]], q


def test_a_phrase_matches_only_the_words_in_that_order(api: Api, mind: MindHandle, pump: Pump) -> None:
    exact = store(api, mind, key="style", content="Prefers concise technical responses")
    store(api, mind, key="reversed", content="Technical notes, never concise")
    pump.run_once()
    assert ids(search(api, mind, '"concise technical"')) == [exact["id"]]
    assert len(ids(search(api, mind, "concise technical"))) == 2


def test_a_prefix_matches_every_word_it_starts(api: Api, mind: MindHandle, pump: Pump) -> None:
    docker = store(api, mind, key="a", content="Runs docker at home", priority="high")
    dockerfile = store(api, mind, key="b", content="Keeps a dockerfile per project")
    store(api, mind, key="c", content="Docs live in the wiki")
    pump.run_once()
    # Both match once; the shorter content ranks first, "docs" does not start with "dock".
    assert ids(search(api, mind, "dock*")) == [docker["id"], dockerfile["id"]]


def test_or_and_not(api: Api, mind: MindHandle, pump: Pump) -> None:
    swarm = store(api, mind, key="a", content="docker swarm cluster", priority="critical")
    compose = store(api, mind, key="b", content="docker compose file", priority="high")
    k8s = store(api, mind, key="c", content="kubernetes cluster", priority="normal")
    pump.run_once()
    assert ids(search(api, mind, "docker NOT swarm")) == [compose["id"]]
    assert set(ids(search(api, mind, "swarm OR kubernetes"))) == {swarm["id"], k8s["id"]}
    assert ids(search(api, mind, "(swarm OR compose) NOT kubernetes")) == [swarm["id"], compose["id"]]
    assert ids(search(api, mind, "cluster AND (docker OR nothing)")) == [swarm["id"]]


def test_a_hit_in_key_or_tags_outranks_a_hit_in_content(api: Api, mind: MindHandle, pump: Pump) -> None:
    in_content = store(api, mind, key="setup", content="We use docker for the build servers")
    in_key = store(api, mind, key="docker_setup", content="We use it for the build servers")
    in_tags = store(api, mind, key="servers", content="We use it for the build servers", tags=["docker"])
    pump.run_once()
    # (mode=lexical: BM25 alone; by default meaning breaks ties between these too)
    found = ids(search(api, mind, "docker", mode="lexical"))
    assert found == [in_key["id"], in_tags["id"], in_content["id"]]
    scores = [r["score"] for r in search(api, mind, "docker", mode="lexical").json()["results"]]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


def test_ties_break_by_priority_then_recency(api: Api, mind: MindHandle, pump: Pump) -> None:
    older = store(api, mind, key="a", content="same words here")
    critical = store(api, mind, key="b", content="same words here", priority="critical")
    newer = store(api, mind, key="c", content="same words here")
    pump.run_once()
    assert ids(search(api, mind, "words", mode="lexical")) == [critical["id"], newer["id"], older["id"]]


def test_the_snippet_marks_the_hits(api: Api, mind: MindHandle, pump: Pump) -> None:
    store(api, mind, key="a", content="The quick brown fox jumps over the lazy dog")
    pump.run_once()
    (result,) = search(api, mind, "fox").json()["results"]
    assert "**fox**" in result["snippet"]
    assert isinstance(result["score"], float) and result["score"] > 0


def test_the_snippet_is_the_contents_words_and_falls_back_to_tags_then_key(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    # Given a note stored from content alone (its key derived from those words), a memory whose tags
    # alone say the word, and one whose key alone does
    content = "Works at a standing desk in the spare bedroom"
    note = api.call("POST", "/memory", json_body={"content": content}, **as_agent(mind)).json()
    tagged = store(api, mind, key="office", content="Upstairs, by the window", tags=["works"])
    keyed = store(api, mind, key="works_council", content="Meets every Tuesday")
    pump.run_once()
    # When each is found by a word, lexically and by default
    for mode in ("lexical", "hybrid"):
        found = {
            r["memory"]["id"]: r["snippet"] for r in search(api, mind, "works", mode=mode).json()["results"]
        }
        # Then the note's snippet is its content with the hit marked, never its generated key
        assert found[note["id"]] == "**Works** at a standing desk in the spare bedroom", mode
        # And only where the content has no hit does the snippet come from the tags, then the key
        assert (found[tagged["id"]], found[keyed["id"]]) == ("**works**", "**works**_council"), mode
    # And a folded hit is marked on the content as written
    cafe = store(api, mind, key="cafe_visits", content="Meets Zoë at the café on Fridays")
    pump.run_once()
    (hit,) = search(api, mind, "cafe", mode="lexical").json()["results"]
    assert hit["memory"]["id"] == cafe["id"] and hit["snippet"] == "Meets Zoë at the **café** on Fridays"


# ---------------------------------------------------------------- filters and pages


def test_filters_tag_category_priority(api: Api, mind: MindHandle, pump: Pump) -> None:
    tagged = store(api, mind, key="a", content="deploy notes", tags=["Docker"], category="project")
    store(api, mind, key="b", content="deploy notes", tags=["k8s"], category="fact", priority="high")
    pump.run_once()
    assert ids(search(api, mind, "deploy", tag="docker")) == [tagged["id"]]
    assert ids(search(api, mind, "deploy", category="project")) == [tagged["id"]]
    assert ids(search(api, mind, "deploy", priority="normal")) == [tagged["id"]]
    assert_error(search(api, mind, "deploy", category="nope"), 400, field="category")


def test_expired_memories_only_with_include_expired(api: Api, mind: MindHandle, pump: Pump) -> None:
    gone = store(api, mind, key="a", content="old lease", expires_at=clock.to_iso(clock.now()))  # expired now
    pump.run_once()
    assert ids(search(api, mind, "lease")) == []
    answer = search(api, mind, "lease", include_expired="true")
    assert ids(answer) == [gone["id"]] and answer.json()["results"][0]["memory"]["expired"] is True


def test_pages_follow_the_cursor_to_the_end(api: Api, mind: MindHandle, pump: Pump) -> None:
    stored = {store(api, mind, key=f"k{i}", content=f"page item {i}")["id"] for i in range(5)}
    pump.run_once()
    seen: list[str] = []
    cursor = None
    for _ in range(3):
        answer = search(api, mind, "item", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += ids(answer)
        cursor = answer.json()["next_cursor"]
    assert cursor is None and len(seen) == 5 and set(seen) == stored


def test_a_cursor_for_another_query_is_a_400(api: Api, mind: MindHandle, pump: Pump) -> None:
    for i in range(3):
        store(api, mind, key=f"k{i}", content=f"page item {i}")
    pump.run_once()
    cursor = search(api, mind, "item", limit=1).json()["next_cursor"]
    assert cursor
    assert_error(search(api, mind, "page", limit=1, cursor=cursor), 400, field="cursor")
    assert_error(search(api, mind, "item", limit=1, cursor="garbage"), 400, field="cursor")


# ---------------------------------------------------------------- the record as it is now


def test_a_deleted_memory_is_not_returned_while_the_index_still_has_it(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    doomed = store(api, mind, key="a", content="ephemeral fact")
    kept = store(api, mind, key="b", content="ephemeral but kept")
    pump.run_once()
    assert api.call("DELETE", f"/memory/{doomed['id']}", **as_user(mind)).status == 204
    # The stream has not been applied: the index still holds the deleted memory.
    assert ids(search(api, mind, "ephemeral")) == [kept["id"]]
    pump.run_once()
    assert ids(search(api, mind, "ephemeral")) == [kept["id"]]


def test_an_updated_memory_is_returned_as_it_is_now(api: Api, mind: MindHandle, pump: Pump) -> None:
    memory = store(api, mind, key="a", content="Lives in Berlin")
    pump.run_once()
    updated = api.call(
        "PUT", f"/memory/{memory['id']}", json_body={"content": "Lives in Hamburg"}, **as_user(mind)
    )
    assert updated.status == 200, updated.text
    (result,) = search(api, mind, "berlin").json()["results"]
    assert result["memory"]["content"] == "Lives in Hamburg" and result["memory"]["version"] == 2
    pump.run_once()
    assert ids(search(api, mind, "berlin", mode="lexical")) == []  # (by meaning, Hamburg is near Berlin)
    assert ids(search(api, mind, "hamburg")) == [memory["id"]]


def test_a_mind_without_an_index_answers_empty_results(api: Api, mind: MindHandle, index_root: Path) -> None:
    answer = search(api, mind, "anything")
    expected = {"results": [], "terms": ["anything"], "mode": "lexical", "next_cursor": None}
    assert answer.status == 200 and answer.json() == expected


def test_another_minds_memories_are_never_found(api: Api, pump: Pump) -> None:
    mine, theirs = api.create_mind("user-1"), api.create_mind("user-2")
    store(api, theirs, key="secret", content="their private words")
    pump.run_once()
    assert ids(search(api, mine, "private")) == []
    foreign = api.call(
        "GET", "/memory/search", query={"q": "private"}, token=mine.jwt, headers={"X-Mind-Id": theirs.id}
    )
    assert_error(foreign, 404)


def test_deleting_a_mind_removes_its_index_files(
    api: Api, mind: MindHandle, pump: Pump, index_root: Path
) -> None:
    store(api, mind, key="a", content="anything")
    pump.run_once()
    assert (index_root / mind.id / generations.CURRENT).is_file()
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    pump.run_once()
    assert not (index_root / mind.id).exists()


# ---------------------------------------------------------------- hostile queries


def hostile_queries() -> list[str]:
    fragments = [
        '"',
        '""',
        '"""',
        '"unbalanced',
        'unbalanced"',
        'a "b c',
        "'",
        "''",
        "(",
        ")",
        "((",
        "))",
        "()",
        "(a",
        "a)",
        "((a)",
        "(a))",
        "OR",
        "AND",
        "NOT",
        "OR OR",
        "AND AND",
        "NOT NOT",
        "a OR",
        "OR a",
        "a AND",
        "AND a",
        "NOT a",
        "a NOT",
        "a OR OR b",
        "a AND OR b",
        "a NOT NOT b",
        "(OR)",
        "(NOT a)",
        "NEAR(",
        "NEAR(a b)",
        "NEAR(a b, 2)",
        "NEAR",
        "a NEAR b",
        "NEAR/2",
        "content:",
        "content:foo",
        "key:foo",
        "tags:bar",
        "{key content}:x",
        "-content:foo",
        "fts:foo",
        "rank:1",
        "*",
        "**",
        "a*b",
        "*a",
        "* *",
        "a * b",
        "^",
        "^a",
        "a^",
        "+",
        "-",
        "a + b",
        "a - b",
        "-a",
        "+a",
        ":",
        "::",
        "a:b:c",
        ";",
        "'; DROP TABLE docs; --",
        "1=1",
        "' OR '1'='1",
        '" OR "1"="1',
        "SELECT * FROM fts",
        "docs WHERE 1",
        "/*",
        "*/",
        "--",
        "%",
        "%%",
        "_",
        "\\",
        "\\\\",
        '\\"',
        "\x00",
        "a\x00b",
        "\x01\x02\x03",
        "\t\n\r",
        "\x7f",
        "\u200b",
        "\u202e",
        "\ufeff",
        "\U0001f600",
        "🔥🔥🔥",
        "👨‍👩‍👧",
        "🙂 docker",
        "docker 🙂",
        "日本語",
        "中文 搜索",
        "العربية",
        "עברית",
        "русский",
        "Ελληνικά",
        "ﬁ",
        "Å",
        "İstanbul",
        "ß",
        "ǅ",
        "\u0301",
        "e\u0301",
        "a" * 5000,
        "x " * 2500,
        "(" * 300 + "a",
        "a" + ")" * 300,
        "(" * 9 + "a" + ")" * 9,
        "(" * 8 + "a" + ")" * 8,
        "a OR " * 40 + "b",
        "NOT " * 50,
        '"' * 101,
        "a" * 999 + "*",
        "\ud800",
        "x\udfffy",
        "NULL",
        "null",
        "None",
        "true",
        "0",
        "-1",
        "1e309",
        "NaN",
        "[a]",
        "{a}",
        "<script>alert(1)</script>",
        "&amp;",
        "%00",
        "%27",
        "a\\ b",
        "a'b",
        "a`b",
        "$(whoami)",
        "${jndi:ldap://x}",
        "{{7*7}}",
        "..",
        "../../etc/passwd",
        "a,b",
        "a.b",
        "a/b",
        "a|b",
        "a&b",
        "a~b",
        "a=b",
        "a!b",
        "a?b",
        "a#b",
        "a@b",
        "@",
        "#",
        "~",
        "!",
        "or",
        "and",
        "not",
        "Or",
        "nOT",
        '"a" "b"',
        '"a"*',
        '"a" *',
        '""*',
        "a**",
        "a* *",
        '("a")',
        '(")',
        '("a" OR)',
        "AND (",
        ") OR (",
        "a ) ( b",
        "( ( ( ) ) )",
        "a ( ) b",
        "MATCH",
        "fts MATCH 'x'",
        "bm25(fts)",
        "snippet(fts)",
        "highlight",
        "'",
        "''''",
        "a'",
        "'a",
        " ",
        "   ",
        "\u3000",
        "\u00a0a\u00a0",
    ]
    # Every operator and punctuation mark alone, leading, trailing, doubled and glued to a word.
    marks = ["OR", "AND", "NOT", "NEAR", "(", ")", '"', "*", "^", ":", "-", "+", "{", "}", ",", "'"]
    shapes = ["x {m}", "{m} x", "x {m} {m} y", "x{m}y", "({m})"]
    generated = [shape.format(m=mark) for mark in marks for shape in shapes]
    everything = fragments + generated
    assert len(everything) >= 200
    return everything


def test_hostile_queries_get_no_500_and_leak_nothing(api: Api, mind: MindHandle, pump: Pump) -> None:
    store(api, mind, key="a", content="docker swarm NOT kubernetes or Schäfer OR (NEAR) content:x")
    pump.run_once()
    for q in hostile_queries():
        # Sent as the bytes a client would put on the wire (lone surrogates as their invalid UTF-8).
        query = {"q": q.encode("utf-8", "surrogatepass")}
        answer = api.call("GET", "/memory/search", query=query, **as_agent(mind))
        assert answer.status in {200, 400}, (q, answer.status, answer.text)
        text = answer.text.lower()
        assert not any(marker in text for marker in LEAK_MARKERS), (q, answer.text)
        if answer.status == 400:
            error = assert_error(answer, 400, field="q")
            assert error["message"].startswith("q: "), error


def test_a_missing_q_is_a_400_naming_it(api: Api, mind: MindHandle, index_root: Path) -> None:
    assert_error(api.call("GET", "/memory/search", **as_agent(mind)), 400, field="q")
    assert_error(search(api, mind, "a" * 1001), 400, field="q")
    body = json.loads(search(api, mind, "***").text)
    assert "letters or digits" in body["error"]["message"]
