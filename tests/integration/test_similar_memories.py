"""GET /memory/{id}/similar (issue 42 item 7): the memories a stored memory may replace, asked after
its write by the person who reviews it (the console's queue), and the person's mark applied with
PUT /memory/{id} `supersedes`. Through the gateway: the real handlers, moto DynamoDB, its stream fed
to the real indexer, and the deterministic fake model (these tests are about the route, not about
meaning: tests/integration/test_search_meaning.py holds the real model's `similar`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from synapse.embedding.errors import EmbeddingError
from synapse.index import vectors

from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle, jwt_for
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.embedding import FakeEmbedder
from tests.support.embedding import fake_embedder_fixture as fake_embedder_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def stored(api: Api, mind: MindHandle, key: str, content: str) -> dict[str, Any]:
    """A memory an agent stored (unverified: what waits in the review queue)."""
    return ok(api.store(mind, as_agent=True, category="fact", key=key, content=content), 201)


def similar(api: Api, mind: MindHandle, memory_id: str) -> dict[str, Any]:
    return ok(api.call("GET", f"/memory/{memory_id}/similar", **as_user(mind)))


def test_a_queued_write_names_the_older_memory_it_may_replace_with_that_memory(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given an older fact, indexed, and an agent's newer one under another key
    acme = stored(api, mind, "employer", "Works at Acme")
    stored(api, mind, "allergy", "Allergic to peanuts")
    pump.run_once()
    globex = stored(api, mind, "new_employer", "Now works at Globex as a manager")
    pump.run_once()
    # When the person reviewing it asks what it may replace
    answer = similar(api, mind, globex["id"])
    # Then the answer names the older fact as its write did, with the memory as it is now
    assert answer["id"] == globex["id"]
    assert [(s["id"], s["key"], s["relation"]) for s in answer["similar"]] == [
        (acme["id"], "employer", "related")
    ]
    assert [(s["id"], s["key"]) for s in answer["similar"]] == [
        (s["id"], s["key"]) for s in globex["similar"]
    ]
    shown = answer["similar"][0]["memory"]
    assert (shown["content"], shown["created_at"], shown["version"]) == (
        "Works at Acme",
        acme["created_at"],
        1,
    )
    # And an agent's key with `read` gets the same answer
    by_agent = ok(api.call("GET", f"/memory/{globex['id']}/similar", **as_agent(mind)))
    assert by_agent == answer


def test_a_memory_marked_replaced_is_no_longer_offered(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a newer fact that may replace an older one
    acme = stored(api, mind, "employer", "Works at Acme")
    pump.run_once()
    globex = stored(api, mind, "new_employer", "Now works at Globex as a manager")
    pump.run_once()
    assert [s["id"] for s in similar(api, mind, globex["id"])["similar"]] == [acme["id"]]
    # When the person marks it replaced (the console's one action), before the index has caught up
    marked = api.call(
        "PUT",
        f"/memory/{globex['id']}",
        json_body={"supersedes": [acme["id"]]},
        token=mind.jwt,
        headers={"X-Mind-Id": mind.id, "If-Match": str(globex["version"])},
    )
    # Then the mark applies at once (a person's), and the older fact names its replacement
    assert ok(marked)["supersedes"] == [{"id": acme["id"], "status": "superseded"}]
    assert ok(api.call("GET", f"/memory/{acme['id']}", **as_user(mind)))["superseded_by"] == globex["id"]
    # And it is offered no more, though the index still held it current
    assert similar(api, mind, globex["id"])["similar"] == []
    pump.run_once()
    assert similar(api, mind, globex["id"])["similar"] == []


def test_a_memory_deleted_since_the_index_was_published_is_not_offered(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given an older fact the index holds, deleted before the indexer hears of it
    acme = stored(api, mind, "employer", "Works at Acme")
    pump.run_once()
    globex = stored(api, mind, "new_employer", "Now works at Globex as a manager")
    assert [s["id"] for s in globex["similar"]] == [acme["id"]]
    assert api.call("DELETE", f"/memory/{acme['id']}", **as_user(mind)).status == 204
    # When the person asks what the newer one may replace
    # Then nothing is offered: the table, not the index, says what is there
    assert similar(api, mind, globex["id"])["similar"] == []


def test_a_memory_like_no_other_offers_nothing(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given two unrelated facts, indexed
    stored(api, mind, "employer", "Works at Acme")
    allergy = stored(api, mind, "allergy", "Allergic to peanuts")
    pump.run_once()
    # When the person asks what one may replace
    # Then the answer is an empty list, never itself
    assert similar(api, mind, allergy["id"]) == {"id": allergy["id"], "similar": []}


class BrokenModel(FakeEmbedder):
    name = "broken-model-1"  # not the fake's: nothing it embedded a moment ago is reused

    def embed(self, texts: Sequence[str]) -> Any:
        raise EmbeddingError("the model file is damaged")


@pytest.fixture
def broken_model(fake_embedder: FakeEmbedder) -> Iterator[None]:
    vectors.use_embedder(BrokenModel())
    yield
    vectors.use_embedder(fake_embedder)


def test_a_failed_model_says_similar_unavailable_instead_of_failing(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder, broken_model: None
) -> None:
    # Given a mind with an index and a memory in it, and then a model that fails
    acme = stored(api, mind, "employer", "Works at Acme")
    pump.run_once()
    # When the person asks what it may replace
    answer = similar(api, mind, acme["id"])
    # Then the answer says the look-up was unavailable, not a 500
    assert answer == {"id": acme["id"], "similar_unavailable": True}


def test_an_unknown_memory_or_another_minds_is_a_404(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a memory of another person's mind
    other = api.create_mind(user="user-2")
    theirs = stored(api, other, "employer", "Works at Acme")
    # When this mind's owner asks about it, or about an id that never existed
    # Then both are the same 404
    assert_error(api.call("GET", f"/memory/{theirs['id']}/similar", **as_user(mind)), 404)
    assert_error(api.call("GET", "/memory/mem_nothing/similar", **as_user(mind)), 404)
    # And a stranger to the mind gets the 404 too
    stranger: dict[str, Any] = {"token": jwt_for("user-3"), "headers": {"X-Mind-Id": mind.id}}
    assert_error(api.call("GET", f"/memory/{theirs['id']}/similar", **stranger), 404)


def test_a_key_without_read_is_refused_what_memories_say(
    api: Api, mind: MindHandle, pump: Pump, fake_embedder: FakeEmbedder
) -> None:
    # Given a key that may only write, and a memory it stored
    made = api.call(
        "POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "w", "scopes": ["write"]}
    )
    writer = ok(made, 201)["key"]
    memory = ok(
        api.call("POST", "/memory", token=writer, json_body={"key": "car", "content": "Drives a Tesla"}), 201
    )
    # When it asks what the memory may replace
    answer = api.call("GET", f"/memory/{memory['id']}/similar", token=writer)
    # Then it is refused: the answer would carry other memories' content
    error = assert_error(answer, 403)
    assert error["details"] == [{"scope": "read"}]
