"""A broken model degrades, never loses (issue 40 item 4): with a byte flipped in either model (a
temporary copy: the files the build ships are never touched), writes are stored and indexed
lexically and say `similar_unavailable`, the vectors come back by themselves once the model does,
and search answers by words (`mode: lexical`), never a 500. Through the gateway: the real handlers,
moto DynamoDB, its stream fed to the real indexer, and the real model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from synapse import embedding
from synapse.embedding import minilm
from synapse.index import deferred, readers, vectors

from infra.stream_pump import Pump
from tests.support import metrics as emitted
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


class Models:
    """Copies of both model files, the process's embedder pointed at them; a byte of either flipped
    and put back at will."""

    def __init__(self, folder: Path) -> None:
        questions = minilm.questions_model_path()
        assert questions is not None, "the checkout holds the questions' model"
        self.stored = folder / "stored" / minilm.MODEL_FILE
        self.questions = folder / "questions" / minilm.MODEL_FILE
        for source, copy in ((minilm.model_path(), self.stored), (questions, self.questions)):
            copy.parent.mkdir(parents=True)
            shutil.copyfile(source, copy)

    @staticmethod
    def flip(path: Path) -> None:
        with path.open("r+b") as handle:
            handle.seek(path.stat().st_size // 2)
            byte = handle.read(1)
            handle.seek(-1, 1)
            handle.write(bytes([byte[0] ^ 0xFF]))

    flip_back = flip  # flipping the same byte again restores the file

    @staticmethod
    def restart() -> None:
        """A new process (a cold start): nothing loaded yet, the damaged file is what it finds."""
        embedding._loaded.clear()
        embedding.embed_query.cache_clear()
        vectors._recent.clear()  # vectors a write embedded a moment ago (other tests' texts too)


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    copies = Models(tmp_path / "models")
    monkeypatch.setattr(minilm, "model_path", lambda: copies.stored)
    monkeypatch.setattr(minilm, "questions_model_path", lambda: copies.questions)
    monkeypatch.setattr(minilm, "RETRY_AFTER_FAILURE_SECONDS", 0.0)  # a repaired file is used at once
    monkeypatch.setattr(embedding, "_loaded", [])  # a process embedder that loads from the copies
    embedding.embed_query.cache_clear()
    yield copies
    embedding.embed_query.cache_clear()


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def store(api: Api, mind: MindHandle, key: str, content: str) -> dict[str, Any]:
    answer = api.store(mind, category="fact", key=key, content=content)
    assert answer.status == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


def search(api: Api, mind: MindHandle, q: str, **params: str) -> dict[str, Any]:
    answer = api.call("GET", "/memory/search", query={"q": q, **params}, **as_agent(mind))
    assert answer.status == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def vectors_of(mind: MindHandle) -> set[str]:
    """The memories whose vector the mind's published generation holds."""
    db = readers.reader(mind.id)
    assert db is not None
    return {row[0] for row in db.execute("SELECT memory_id FROM vectors")}


def test_a_broken_stored_texts_model_costs_no_memory_and_its_vectors_come_back(
    api: Api,
    mind: MindHandle,
    pump: Pump,
    models: Models,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a fact indexed with its vector
    tesla = store(api, mind, "car", "Drives a 2019 Tesla Model 3")
    pump.run_once()
    # When the stored texts' model is damaged and an update of that fact is stored, alone and in a batch
    models.flip(models.stored)
    models.restart()
    capsys.readouterr()
    bmw = store(api, mind, "new_car", "Drives a 2024 BMW i4 now; sold the Tesla")
    batch = api.call(
        "POST",
        "/memory/batch",
        json_body={"memories": [{"category": "fact", "key": "bike", "content": "Rides a red Brompton bike"}]},
        **as_agent(mind),
    )
    # Then each is stored, and its answer says `similar` could not be looked up (a log line and a metric too)
    assert bmw["similar_unavailable"] is True and "similar" not in bmw
    assert batch.status == 200 and batch.json()["results"][0]["similar_unavailable"] is True
    assert emitted.values(capsys.readouterr().out)["SimilarUnavailable"] == [1.0, 1.0]
    assert [r.message for r in caplog.records if r.levelname == "WARNING"] == [
        "degraded by a model failure (nothing lost): SimilarUnavailable"
    ] * 2
    # And the indexer publishes their rows without vectors: found by their words at once
    pump.run_once()
    assert emitted.values(capsys.readouterr().out)["IndexVectorsDeferred"] == [2.0]
    by_words = search(api, mind, "BMW i4", mode="lexical")["results"]
    assert [r["memory"]["id"] for r in by_words] == [bmw["id"]]
    assert vectors_of(mind) == {tesla["id"]} and deferred.pending() == [mind.id]
    # When the model is repaired and any later batch is indexed (here: another mind's)
    models.flip_back(models.stored)
    store(api, api.create_mind(), "unrelated", "Team standup at 9:15 on weekdays")
    pump.run_once()
    # Then the memories the failure left without vectors have them, and none is marked any more
    assert vectors_of(mind) == {tesla["id"], bmw["id"], batch.json()["results"][0]["memory"]["id"]}
    assert deferred.pending() == []
    found = search(api, mind, "Which car does he drive?")
    assert found["mode"] == "hybrid" and found["results"][0]["memory"]["id"] == bmw["id"]
    assert found["results"][0]["similarity"] is not None


def test_a_broken_questions_model_answers_searches_by_their_words(
    api: Api, mind: MindHandle, pump: Pump, models: Models, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given facts indexed with their vectors
    tesla = store(api, mind, "car", "Drives a 2019 Tesla Model 3")
    store(api, mind, "standup", "Team standup at 9:15 on weekdays")
    pump.run_once()
    # When the questions' model is damaged and the mind is searched
    models.flip(models.questions)
    models.restart()
    capsys.readouterr()
    by_words = search(api, mind, "Tesla")
    by_meaning = search(api, mind, "Which car does he drive?")
    # Then the searches are answered by words, and say so: never a 500
    assert by_words["mode"] == "lexical" and [r["memory"]["id"] for r in by_words["results"]] == [tesla["id"]]
    assert by_meaning["mode"] == "lexical"
    assert all(r["similarity"] is None for r in by_meaning["results"])
    assert emitted.values(capsys.readouterr().out)["SearchLexicalFallback"] == [1.0, 1.0]
    # And writes still name their repeats (the stored texts' model is whole)
    again = store(api, mind, "new_car", "Drives a 2024 BMW i4 now; sold the Tesla")
    assert [s["id"] for s in again["similar"]] == [tesla["id"]]
    # When the model is repaired, search by meaning is back
    models.flip_back(models.questions)
    found = search(api, mind, "Which car does he drive?")
    assert found["mode"] == "hybrid" and found["results"][0]["similarity"] is not None


def test_the_mcp_answer_says_similar_is_unavailable(
    api: Api, mind: MindHandle, pump: Pump, models: Models
) -> None:
    # Given a mind with an index, and a damaged stored texts' model
    store(api, mind, "car", "Drives a 2019 Tesla Model 3")
    pump.run_once()
    models.flip(models.stored)
    models.restart()
    # When an agent remembers through MCP, one memory and many
    one = mcp_tool(api, mind, "remember", content="Drives a 2024 BMW i4 now; sold the Tesla")
    many = mcp_tool(api, mind, "remember_many", memories=[{"content": "Rides a red Brompton bike"}])
    # Then both answers say `similar` could not be looked up
    assert one["similar_unavailable"] is True
    assert many["results"][0]["similar_unavailable"] is True


def mcp_tool(api: Api, mind: MindHandle, name: str, **arguments: Any) -> Any:
    params = {"name": name, "arguments": arguments}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
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
