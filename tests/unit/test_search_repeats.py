"""`similar` on a write (issue 43): memories written together are compared with each other, not
through the index, so the answer does not depend on how far the indexer got meanwhile; a batch-mate
is named only when it says the same thing again.

The model is the deterministic fake of tests/support/embedding.py (a bag of words)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from synapse.index.documents import Change, Doc
from synapse.memory.kinds import Memory
from synapse.search import relations, repeats

from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.indexing import apply_batch
from tests.support.memories import a_memory
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

MIND = "m_repeats"
# Two turns of one conversation: one topic, many shared words, not the same thing said twice.
TURN_1 = "Nadia: the treehouse for Ivy is nearly done, the roof and the ladder are built"
TURN_2 = "Nadia: the treehouse for Ivy is nearly done, only the roof and the ladder are left"
OLDER = "Nadia: the treehouse for Ivy is nearly done, with the roof and the ladder"


@pytest.fixture(name="index_root")
def index_root_fixture(configure: Configure, tmp_path: Path) -> Path:
    root = tmp_path / "index"
    configure(SYNAPSE_INDEX_DIR=str(root))
    return root


def memory(key: str, content: str) -> Memory:
    return a_memory(MIND, key=key)._replace(content=content)


def indexed(base: Path, *memories: Memory) -> None:
    docs = [Doc(m.id, MIND, "fact", m.key, m.content, (), "normal", m.updated_at, None, 1) for m in memories]
    apply_batch(MIND, [Change.upsert(doc) for doc in docs], base)


def cosine(fake: FakeEmbedder, a: Memory, b: Memory) -> float:
    first, second = fake.embed([f"{a.key}\n{a.content}", f"{b.key}\n{b.content}"])
    return float(np.dot(first, second))


def named(found: list[dict[str, object]] | None) -> list[object]:
    assert found is not None
    return [hint["key"] for hint in found]


def test_batch_mates_the_indexer_already_published_are_not_named(
    index_root: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given an older memory indexed, and two turns of one conversation written together as a batch
    older = memory("older", OLDER)
    first, second = memory("turn_1", TURN_1), memory("turn_2", TURN_2)
    assert repeats.SIMILAR_THRESHOLD <= cosine(fake_embedder, first, second) < repeats.BATCH_MATE_SIMILARITY
    indexed(index_root, older)
    # When `similar` is asked before the indexer has published the batch, and again after it has
    before = repeats.similar_to(MIND, [first, second])
    indexed(index_root, first, second)
    after = repeats.similar_to(MIND, [first, second])
    # Then both answers are the same: the older memory, never the batch-mate
    assert [named(hints) for hints in before] == [["older"], ["older"]]
    assert after == before


def test_the_same_fact_twice_in_one_batch_is_named_on_the_later_one(
    index_root: Path, fake_embedder: FakeEmbedder
) -> None:
    # Given a mind with an index, and a batch that says one fact twice under two keys
    indexed(index_root, memory("dog", "Has a golden retriever"))
    first = memory("spouse", "Wife is Anna, married since 2015")
    again = memory("wife", "Wife is Anna, married since 2015")
    other = memory("car", "Drives a Tesla")
    # When `similar` is asked for the batch
    found = repeats.similar_to(MIND, [first, other, again])
    # Then the later one names the earlier (as if written one after the other), nothing else is named
    # (a mind without an index yet embeds nothing on its write path: `similar` starts with its index)
    assert [named(hints) for hints in found] == [[], [], ["spouse"]]
    [hint] = found[2] or []
    assert hint["id"] == first.id and hint["similarity"] >= repeats.BATCH_MATE_SIMILARITY


def test_each_write_of_a_batch_weighs_its_nearest_index_memories_not_a_batch_more(
    index_root: Path, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind whose index holds many turns of one conversation, two of them sent again in a batch
    turns = [memory(f"turn_{n}", f"{TURN_1}, said on day {n}") for n in range(40)]
    indexed(index_root, *turns)
    batch = [turns[0], turns[1], *(memory(f"new_{n}", f"{TURN_2}, said on day {n}") for n in range(20))]
    weighed: list[list[str]] = []
    label = relations.labelled

    def counted(key: str, content: str, candidates: Any, limit: int) -> list[dict[str, Any]]:
        weighed.append([c.id for c in candidates])
        return label(key, content, candidates, limit)

    monkeypatch.setattr(relations, "labelled", counted)
    # When `similar` is asked for the batch
    repeats.similar_to(MIND, batch)
    # Then each write weighed at most a dozen memories of the index besides the batch's own (a
    # batch-mate is weighed only when it says the same again)
    own = {m.id for m in batch}
    from_index = [[i for i in ids if i not in own] for ids in weighed]
    assert len(weighed) == len(batch)
    assert all(0 < len(ids) <= repeats.CANDIDATES + repeats.SPARE_CANDIDATES for ids in from_index)
