"""A stream batch's texts are embedded on a thread of their own while its minds are written (issue
33's indexer rate): each text once, the minds' vectors taken from there, an update that keeps its
text not embedded again, still version-gated, and a failure there costs the batch nothing.

The model is the deterministic fake of tests/support/embedding.py (these tests are about mechanics)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from synapse.index import ahead, orphans, readers, stream, vectors

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.streams import stream_record as record

NOW = "2026-06-01T00:00:00.000Z"


@pytest.fixture(autouse=True)
def minds_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orphans, "mind_exists", lambda mind_id: True)


def item(mind: str, n: int, content: str, version: int = 1, priority: str = "normal") -> dict[str, Any]:
    return {
        "pk": mind,
        "sk": f"MEM#fact#k{n}",
        "id": f"mem_{n:04d}",
        "mind_id": mind,
        "category": "fact",
        "key": f"k{n}",
        "content": content,
        "tags": [],
        "priority": priority,
        "updated_at": NOW,
        "version": version,
    }


def index(base: Path, *records: dict[str, Any]) -> None:
    assert stream.index_stream({"Records": list(records)}, base) == {"batchItemFailures": []}


def stored(base: Path, mind: str) -> dict[str, tuple[int, np.ndarray]]:
    db = readers.reader(mind, base)
    assert db is not None
    rows = db.execute("SELECT memory_id, version, vector FROM vectors").fetchall()
    return {m: (v, np.frombuffer(blob, dtype=np.float16).astype(np.float32)) for m, v, blob in rows}


class Noting(FakeEmbedder):
    """The fake, noting which thread embedded what."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.extend([threading.current_thread().name] * len(texts))
        return super().embed(texts)


@pytest.fixture
def noting() -> Iterator[Noting]:
    fake = Noting()
    vectors.use_embedder(fake)
    yield fake
    vectors.use_embedder(None)


def test_a_batch_embeds_each_text_once_on_its_own_thread(tmp_path: Path, noting: Noting) -> None:
    # Given a batch of many minds, more texts than one run of the embedding thread
    fake = noting
    minds = [f"m_{n:03d}" for n in range(ahead.AHEAD_RUN * 2 + 3)]
    records = [record(item(mind, n, f"memory {n} of {mind}"), sequence=n) for n, mind in enumerate(minds)]
    # When the indexer applies it
    index(tmp_path, *records)
    # Then every text was embedded once, all of them by the batch's thread, none by a mind
    expected = [f"k{n}\nmemory {n} of {mind}" for n, mind in enumerate(minds)]
    assert sorted(fake.embedded) == sorted(expected)
    assert set(fake.threads) == {"synapse-embed-ahead"}
    # And each mind holds its memory's vector, of its text
    for n, mind in enumerate(minds):
        version, vector = stored(tmp_path, mind)[f"mem_{n:04d}"]
        assert version == 1 and float(vector @ fake.embed([expected[n]])[0]) > 0.99


def test_an_update_that_keeps_its_text_is_not_embedded_again(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory indexed with its vector
    first = item("m_keep", 1, "Has a golden retriever")
    index(tmp_path, record(first))
    fake_embedder.embedded.clear()
    # When an update changes only its priority, and another memory's update changes its text
    other = item("m_keep", 2, "Drives a Tesla")
    index(tmp_path, record(other, sequence=2))
    fake_embedder.embedded.clear()
    index(
        tmp_path,
        record(item("m_keep", 1, "Has a golden retriever", 2, "high"), first, sequence=3),
        record(item("m_keep", 2, "Drives a BMW i4", 2), other, sequence=4),
    )
    # Then only the new text is embedded, and both memories have their version's vector
    assert fake_embedder.embedded == ["k2\nDrives a BMW i4"]
    assert {m: v for m, (v, _) in stored(tmp_path, "m_keep").items()} == {"mem_0001": 2, "mem_0002": 2}


def test_a_replayed_older_image_does_not_bring_back_its_vector(
    tmp_path: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given version 2 of a memory indexed
    index(tmp_path, record(item("m_replay", 1, "Drives a BMW i4", 2)))
    # When the stream replays version 1 (another text, embedded ahead with the batch)
    index(tmp_path, record(item("m_replay", 1, "Drives a Tesla", 1), sequence=2))
    # Then the vector stays version 2's
    version, vector = stored(tmp_path, "m_replay")["mem_0001"]
    assert version == 2 and float(vector @ fake_embedder.embed(["k1\nDrives a BMW i4"])[0]) > 0.99


def test_when_the_batchs_embedding_fails_each_mind_embeds_its_own(
    tmp_path: Path, noting: Noting, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a model that fails on the batch's thread only
    fake = noting

    def failing(texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name == "synapse-embed-ahead":
            raise RuntimeError("out of memory")
        return Noting.embed(fake, texts)

    monkeypatch.setattr(fake, "embed", failing)
    # When a batch of two minds is applied
    index(tmp_path, record(item("m_a", 1, "Wife is Anna")), record(item("m_b", 2, "Has a dog"), sequence=2))
    # Then it succeeds, each mind having embedded its own text
    assert sorted(fake.embedded) == ["k1\nWife is Anna", "k2\nHas a dog"]
    assert "mem_0001" in stored(tmp_path, "m_a") and "mem_0002" in stored(tmp_path, "m_b")


def test_a_writer_waits_only_for_its_own_texts() -> None:
    # Given texts embedded ahead, the second run held back
    release = threading.Event()

    class Slow:
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if "late" in texts[0]:
                release.wait(5)
            return np.ones((len(texts), 2), dtype=np.float32)

    running = ahead.Ahead(Slow(), [(b"early", "early")] * ahead.AHEAD_RUN + [(b"late", "late")])
    try:
        # Then the first run's vectors are taken while the second is still embedding
        assert running.take(b"early") is not None
        assert running.take(b"unknown") is None
        release.set()
        assert running.take(b"late") is not None
    finally:
        release.set()
        running.close()
