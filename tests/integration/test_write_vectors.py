"""Nothing embedded twice (issue 43 item 1): what a write embeds for its `similar` is kept in the
process, and an indexer in the same process (the local runner, these tests) stores that vector
instead of embedding the text again. Through the gateway (the real handlers, moto DynamoDB, its
stream fed to the real indexer) with the deterministic fake model, which counts what it embeds."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from synapse.index import readers, vectors
from synapse.memory import writes

from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent
from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def indexed_vector(mind: MindHandle, memory_id: str) -> np.ndarray:
    db = readers.reader(mind.id)
    assert db is not None
    (blob,) = db.execute("SELECT vector FROM vectors WHERE memory_id = ?", (memory_id,)).fetchone()
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32)


def test_a_stored_memory_is_embedded_once_for_its_answer_and_its_index(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind with a fact indexed
    api.store(mind, category="fact", key="car", content="Drives a Tesla")
    pump.run_once()
    fake_embedder.embedded.clear()
    # When its update is stored under another key, and then indexed
    answer = api.store(mind, category="fact", key="new_car", content="Drives a BMW now, sold the Tesla")
    assert answer.status == 201 and [s["key"] for s in answer.json()["similar"]] == ["car"]
    pump.run_once()
    # Then its text was embedded once, for the write's `similar`, and the index stores that vector
    text = "new car\nDrives a BMW now, sold the Tesla"
    assert fake_embedder.embedded == [text]
    expected = fake_embedder.embed([text])[0]
    assert float(indexed_vector(mind, answer.json()["id"]) @ expected) > 0.999


def test_a_batch_embeds_each_memory_once(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind with an index, and a batch of three memories
    api.store(mind, category="fact", key="car", content="Drives a Tesla")
    pump.run_once()
    fake_embedder.embedded.clear()
    contents = ["Has a golden retriever", "Allergic to peanuts", "Team standup at 9:15"]
    body = {"memories": [{"category": "fact", "key": f"k{n}", "content": c} for n, c in enumerate(contents)]}
    # When it is stored and indexed
    answer = api.call("POST", "/memory/batch", json_body=body, **as_agent(mind))
    assert answer.status == 200, answer.text
    pump.run_once()
    # Then each text was embedded once, in one call, and every memory has its vector in the index
    assert sorted(fake_embedder.embedded) == sorted(f"k{n}\n{c}" for n, c in enumerate(contents))
    for result in answer.json()["results"]:
        assert indexed_vector(mind, result["memory"]["id"]).shape == (vectors.DIMS,)


def test_a_minds_first_write_is_embedded_by_the_indexer_alone(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind without an index yet
    # When its first memory is stored
    answer = api.store(mind, category="fact", key="car", content="Drives a Tesla")
    # Then the write embedded nothing (there is nothing to compare it with), and the indexer embeds it once
    assert answer.status == 201 and "similar" not in answer.json()
    assert fake_embedder.embedded == []
    pump.run_once()
    assert fake_embedder.embedded == ["car\nDrives a Tesla"]


NEW_CAR = {"category": "fact", "key": "new_car", "content": "Drives a red BMW now, sold the old Tesla"}


def stored_alone(api: Api, mind: MindHandle) -> dict[str, Any]:
    answer = api.call("POST", "/memory", json_body=NEW_CAR, **as_agent(mind))
    assert answer.status == 201, answer.text
    return dict(answer.json())


def stored_in_a_batch(api: Api, mind: MindHandle) -> dict[str, Any]:
    answer = api.call("POST", "/memory/batch", json_body={"memories": [NEW_CAR]}, **as_agent(mind))
    assert answer.status == 200, answer.text
    return dict(answer.json()["results"][0])


@pytest.mark.parametrize("door", [stored_alone, stored_in_a_batch], ids=["alone", "in a batch"])
def test_a_write_is_embedded_while_its_transaction_runs(
    api: Api,
    mind: MindHandle,
    pump: Pump,
    fake_embedder: FakeEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    door: Callable[[Api, MindHandle], dict[str, Any]],
) -> None:
    # Given a mind with an index, and a store whose transactions wait (a while at most) for the
    # write's text to be embedding
    api.store(mind, category="fact", key="car", content="Drives a Tesla")
    pump.run_once()
    fake_embedder.embedded.clear()
    embedding = threading.Event()
    embed = fake_embedder.embed

    def noticed(texts: Sequence[str]) -> np.ndarray:
        embedding.set()
        return embed(texts)

    monkeypatch.setattr(fake_embedder, "embed", noticed)
    commit = writes.commit
    waited: list[bool] = []

    def waiting(*args: Any, **kwargs: Any) -> Any:
        waited.append(embedding.wait(timeout=10))
        return commit(*args, **kwargs)

    monkeypatch.setattr(writes, "commit", waiting)
    # When it is stored, alone or in a batch (a text of its own: the process keeps what it embedded
    # a moment ago)
    answer = door(api, mind)
    # Then its text was being embedded before its transaction ran, once, and its answer names the
    # memory it repeats as before
    assert waited == [True]
    assert fake_embedder.embedded == ["new car\nDrives a red BMW now, sold the old Tesla"]
    assert [s["key"] for s in answer["similar"]] == ["car"]
