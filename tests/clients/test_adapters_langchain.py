"""The LangChain adapter against a real `make run`: `SynapseRetriever` documents and the four tools,
called as a model's tool calls are (ToolCall in, ToolMessage out)."""

from __future__ import annotations

import json
import time

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from synapse.memory.keys import derived_key
from synapse_client import _agent_tools
from synapse_client.langchain import SynapseRetriever, tools

from tests.clients.conftest import MindClients


def poll(retriever: SynapseRetriever, query: str, expected: int, timeout: float = 20.0) -> list[Document]:
    """Documents once `expected` are indexed (Synapse search is eventually consistent)."""
    deadline = time.monotonic() + timeout
    while True:
        found = retriever.invoke(query)
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_the_retriever_returns_search_hits_as_documents_with_metadata(mind: MindClients) -> None:
    # Given two memories, one tagged
    mind.agent.remember("fact", "home_city", "Ada lives in London", tags=["travel"])
    mind.agent.remember("preference", "coffee_order", "Ada drinks flat whites in London cafes")
    # When the retriever is asked, then narrowed to a tag and to k=1
    docs = poll(SynapseRetriever(client=mind.agent), "london", 2)
    # Then each hit is a Document carrying the memory's id, category, key, tags and score
    assert {doc.metadata["key"] for doc in docs} == {"home_city", "coffee_order"}
    first = docs[0]
    assert first.page_content in {"Ada lives in London", "Ada drinks flat whites in London cafes"}
    assert first.metadata["id"].startswith("mem_") and first.metadata["score"] > 0
    assert {"category", "tags", "matched", "coverage"} <= set(first.metadata)
    tagged = SynapseRetriever(client=mind.agent, tag="travel").invoke("london")
    assert [doc.metadata["key"] for doc in tagged] == ["home_city"]
    assert len(SynapseRetriever(client=mind.agent, k=1).invoke("london")) == 1


def test_the_tools_carry_the_mcp_descriptions_and_schemas() -> None:
    from synapse_client import Synapse

    made = tools(Synapse("http://127.0.0.1:9", mind_key="mk_unused"))
    assert [tool.name for tool in made] == ["remember", "recall", "search", "forget"]
    for tool in made:
        assert tool.description == _agent_tools.SPECS[tool.name]["description"]
        assert tool.args_schema == _agent_tools.SPECS[tool.name]["inputSchema"]


def call(tool_set: dict[str, StructuredTool], name: str, args: dict[str, object], n: int) -> ToolMessage:
    tool = tool_set[name]
    message = tool.invoke({"type": "tool_call", "id": f"call_{n}", "name": name, "args": args})
    assert isinstance(message, ToolMessage)
    return message


def test_a_model_s_tool_calls_remember_recall_search_and_forget(mind: MindClients) -> None:
    tool_set = {tool.name: tool for tool in tools(mind.agent)}
    # When the model remembers with only content, and with a category and key
    noted = json.loads(str(call(tool_set, "remember", {"content": "Ada likes ramen"}, 1).content))
    assert noted["category"] == "note" and noted["key"] == derived_key("note", noted["content"])
    assert noted["key_derived"] is True  # the server's derivation: the client sends content alone
    kept = call(
        tool_set, "remember", {"content": "Ada lives in Paris", "category": "fact", "key": "home_city"}, 2
    )
    assert json.loads(str(kept.content))["key"] == "home_city"
    # Then recall is the plain text, and search finds the memory once indexed
    assert "Ada lives in Paris" in str(call(tool_set, "recall", {"query": "where does Ada live"}, 3).content)
    deadline = time.monotonic() + 20
    while not (hits := json.loads(str(call(tool_set, "search", {"query": "paris"}, 4).content))["results"]):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert hits[0]["key"] == "home_city"
    # And forget by category and key deletes it; a bad call comes back as the tool's error text
    assert json.loads(str(call(tool_set, "forget", {"category": "fact", "key": "home_city"}, 5).content))[
        "deleted"
    ]
    assert mind.agent.find("fact", "home_city") is None
    missing = call(tool_set, "forget", {"category": "fact", "key": "home_city"}, 6)
    assert "No memory fact/home_city" in str(missing.content)
    refused = call(tool_set, "remember", {"content": "x", "key": "Not Snake"}, 7)
    assert refused.status == "error" and "key" in str(refused.content)


def test_a_langgraph_agent_loop_with_a_fake_chat_model_calls_the_tools(mind: MindClients) -> None:
    # Given langchain_core's fake chat model scripted to call remember, then recall, then answer
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    script = [
        AIMessage("", tool_calls=[{"id": "c1", "name": "remember", "args": {"content": "Ada uses Neovim"}}]),
        AIMessage("", tool_calls=[{"id": "c2", "name": "recall", "args": {"query": "editor"}}]),
        AIMessage("Ada uses Neovim."),
    ]
    model = GenericFakeChatModel(messages=iter(script))
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools(mind.agent)))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    # When the compiled graph runs the loop
    out = graph.compile().invoke({"messages": [HumanMessage("I use Neovim")]})
    # Then each tool answered its call, and the memory is in the mind
    answers = {m.tool_call_id: str(m.content) for m in out["messages"] if isinstance(m, ToolMessage)}
    assert json.loads(answers["c1"])["content"] == "Ada uses Neovim"
    assert "Ada uses Neovim" in answers["c2"]
    assert out["messages"][-1].content == "Ada uses Neovim."
    assert [memory.content for memory in mind.agent.list_memories(category="note").items] == [
        "Ada uses Neovim"
    ]
