"""`SynapseStore` (LangGraph `BaseStore`) against a real `make run`: direct store calls, the async
twin, and a compiled graph whose nodes write and search through the store."""

from __future__ import annotations

import asyncio
import time
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, SearchItem
from synapse_client.langgraph import SynapseStore, namespace_tag, synapse_key

from tests.clients.conftest import MindClients


def poll(search: object, expected: int, timeout: float = 20.0) -> list[SearchItem]:
    """Search results once `expected` are indexed (Synapse search is eventually consistent)."""
    assert callable(search)
    deadline = time.monotonic() + timeout
    while True:
        found: list[SearchItem] = search()
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_an_item_put_reads_back_exactly_and_maps_onto_a_memory(mind: MindClients) -> None:
    # Given a store over the agent's mind
    store = SynapseStore(mind.agent)
    # When an item goes in under a category-named namespace
    store.put(("preference", "User-1"), "Coffee order", {"text": "flat white", "cups": 2})
    # Then it reads back as put, and is a Synapse memory with the documented category, key and tags
    item = store.get(("preference", "User-1"), "Coffee order")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ("preference", "User-1"),
        "Coffee order",
        {"text": "flat white", "cups": 2},
    )
    memory = mind.agent.find("preference", synapse_key(("preference", "User-1"), "Coffee order"))
    assert memory is not None
    assert memory.key.startswith("coffee_order_")
    assert {
        "app:private",
        "app:langgraph",
        "app:langgraph:ns:preference",
        "app:langgraph:ns:preference/user-1",
    } <= set(memory.tags)
    # And its content reads as the value, with the exact item in a block at the end
    readable, block = memory.content.split("\n\n```langgraph\n")
    assert readable == "text: flat white\ncups: 2" and block.endswith("```")
    # And other namespaces map to notes, and a missing item is None
    store.put(("docs",), "a", {"text": "x"})
    assert mind.agent.find("note", synapse_key(("docs",), "a")) is not None
    assert store.get(("docs",), "missing") is None


def test_put_again_replaces_and_delete_forgets(mind: MindClients) -> None:
    store = SynapseStore(mind.agent)
    store.put(("notes", "u1"), "k", {"v": 1})
    store.put(("notes", "u1"), "k", {"v": 2})
    item = store.get(("notes", "u1"), "k")
    assert item is not None and item.value == {"v": 2}
    assert len(store.search(("notes",))) == 1
    store.delete(("notes", "u1"), "k")
    assert store.get(("notes", "u1"), "k") is None


def test_search_by_prefix_filter_query_and_list_namespaces(mind: MindClients) -> None:
    # Given items in three namespaces
    store = SynapseStore(mind.agent)
    store.put(("notes", "u1"), "deploy", {"text": "deploy with blue green switch", "kind": "ops"})
    store.put(("notes", "u1"), "lunch", {"text": "likes ramen", "kind": "food"})
    store.put(("notes", "u2"), "deploy", {"text": "deploy on fridays never", "kind": "ops"})
    store.put(("project", "atlas"), "status", {"text": "atlas ships in june"})
    foreign = ["app:langgraph", "app:langgraph:ns:notes"]  # tagged like the store's, but no JSON: skipped
    mind.agent.remember("note", "foreign", "deploy notes written by another agent", tags=foreign)
    # When listing by prefix, with a value filter, and paging with offset
    assert {item.namespace for item in store.search(("notes",))} == {("notes", "u1"), ("notes", "u2")}
    assert [item.key for item in store.search(("notes", "u1"), filter={"kind": "food"})] == ["lunch"]
    assert len(store.search(("notes",), limit=2)) == 2
    assert len(store.search(("notes",), offset=2)) == 1
    # Then a query is a ranked Synapse search within the prefix
    hits = poll(lambda: store.search(("notes",), query="deploy"), 2)
    assert {(hit.namespace, hit.key) for hit in hits} == {
        (("notes", "u1"), "deploy"),
        (("notes", "u2"), "deploy"),
    }
    assert all(hit.score is not None and hit.score > 0 for hit in hits)
    # And namespaces list with prefix/suffix conditions and max_depth
    assert store.list_namespaces() == [("notes", "u1"), ("notes", "u2"), ("project", "atlas")]
    assert store.list_namespaces(prefix=("notes",)) == [("notes", "u1"), ("notes", "u2")]
    assert store.list_namespaces(suffix=("atlas",)) == [("project", "atlas")]
    assert store.list_namespaces(max_depth=1) == [("notes",), ("project",)]
    assert store.list_namespaces(prefix=("*", "u2")) == [("notes", "u2")]


def test_the_async_twin_and_ttl(mind: MindClients) -> None:
    store = SynapseStore(mind.agent)

    async def scenario() -> None:
        await store.aput(("context", "s1"), "today", {"text": "debugging the parser"}, ttl=60)
        item = await store.aget(("context", "s1"), "today")
        assert item is not None and item.value["text"] == "debugging the parser"
        assert [found.key for found in await store.asearch(("context",))] == ["today"]
        assert await store.alist_namespaces() == [("context", "s1")]
        await store.adelete(("context", "s1"), "today")
        assert await store.aget(("context", "s1"), "today") is None

    asyncio.run(scenario())
    memory = mind.agent.list_memories(category="context", include_expired=True).items
    assert memory == []


class State(TypedDict):
    user: str
    fact: str
    found: list[str]


def remember_node(state: State, *, store: BaseStore) -> dict[str, object]:
    store.put(("fact", state["user"]), "fact_1", {"text": state["fact"]})
    return {}


def recall_node(state: State, *, store: BaseStore) -> dict[str, object]:
    return {"found": [item.value["text"] for item in store.search(("fact", state["user"]))]}


def test_a_compiled_graph_writes_and_searches_through_the_store(mind: MindClients) -> None:
    # Given a graph whose first node stores a fact and whose second searches for it
    graph = StateGraph(State)
    graph.add_node("remember", remember_node)
    graph.add_node("recall", recall_node)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=SynapseStore(mind.agent))
    # When it runs
    out = app.invoke({"user": "ada", "fact": "Ada lives in London", "found": []})
    # Then the second node saw what the first stored, and it is a Synapse fact
    assert out["found"] == ["Ada lives in London"]
    assert [memory.category for memory in mind.agent.iter_by_tag(namespace_tag(("fact", "ada")))] == ["fact"]


@pytest.mark.parametrize("depth", [18])
def test_too_deep_a_namespace_is_refused(mind: MindClients, depth: int) -> None:
    with pytest.raises(ValueError, match="at most 17"):
        SynapseStore(mind.agent).put(tuple(f"l{i}" for i in range(depth)), "k", {"v": 1})


def test_items_stay_out_of_the_persons_recall_and_search_unless_their_tag_is_asked(mind: MindClients) -> None:
    # Given a person's memory and a LangGraph item, both about the editor
    mind.person.remember("preference", "editor", "Uses Neovim for everything")
    store = SynapseStore(mind.agent)
    store.put(("preference", "u1"), "editor", {"text": "Neovim, with the lazy plugin manager"})
    # When the person (or another agent) recalls the mind, Then only the person's memory is there
    recall = mind.agent.recall().text
    assert "Uses Neovim for everything" in recall and "lazy plugin manager" not in recall
    assert mind.agent.recall_json().total == 1
    # And the store's own search finds its item, while a search finds only the person's memory
    hits = poll(lambda: store.search(("preference",), query="neovim"), 1)
    assert [(hit.key, hit.value["text"]) for hit in hits] == [
        ("editor", "Neovim, with the lazy plugin manager")
    ]
    searched = mind.agent.search("neovim").items  # the person's was indexed before the item
    assert [(hit.memory.key, hit.memory.content) for hit in searched] == [
        ("editor", "Uses Neovim for everything")
    ]
    # And asking for the app's tag brings the item back, readable
    asked = mind.agent.recall_json(tag="app:langgraph")
    assert asked.total == 1 and asked.memories[0].content.startswith(
        "Neovim, with the lazy plugin manager\n\n"
    )
