"""The OpenAI Agents SDK adapter against a real `make run`: the SDK's `Runner` drives the function
tools from a scripted model (first tool calls, then a final text), no real LLM."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, FunctionTool, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from synapse_client import _agent_tools
from synapse_client.agents import tools

from tests.clients.conftest import MindClients

set_tracing_disabled(True)  # no trace export: tests send traffic to loopback only


class ScriptedModel(Model):
    """Answers each turn with the next scripted step: a list of tool calls, or a final text; it keeps
    what each turn was given, so the test sees the tools' outputs."""

    def __init__(self, steps: list[list[tuple[str, dict[str, Any]]] | str]) -> None:
        self.steps = steps
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        step = self.steps[len(self.inputs) - 1]
        turn = len(self.inputs)
        if isinstance(step, str):
            text = ResponseOutputText(text=step, type="output_text", annotations=[])
            output: list[Any] = [
                ResponseOutputMessage(
                    id=f"msg_{turn}", content=[text], role="assistant", status="completed", type="message"
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    id=f"fc_{turn}_{n}",
                    call_id=f"call_{turn}_{n}",
                    name=name,
                    arguments=json.dumps(args),
                    type="function_call",
                )
                for n, (name, args) in enumerate(step)
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def outputs(model: ScriptedModel) -> dict[str, str]:
    """Each tool call's output, by call id, from what the model was given."""
    return {
        item["call_id"]: item["output"]
        for given in model.inputs
        if isinstance(given, list)
        for item in given
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def test_the_tools_carry_the_mcp_descriptions_and_schemas() -> None:
    from synapse_client import Synapse

    made = tools(Synapse("http://127.0.0.1:9", mind_key="mk_unused"))
    assert [tool.name for tool in made] == ["remember", "recall", "search", "forget"]
    for tool in made:
        assert isinstance(tool, FunctionTool)
        assert tool.description == _agent_tools.SPECS[tool.name]["description"]
        assert tool.params_json_schema == _agent_tools.SPECS[tool.name]["inputSchema"]


def test_the_runner_drives_remember_recall_and_forget(mind: MindClients) -> None:
    # Given an agent with Synapse's tools and a model that remembers, recalls, forgets, then answers
    model = ScriptedModel(
        [
            [("remember", {"content": "Ada lives in Paris", "category": "fact", "key": "home_city"})],
            [("recall", {"query": "where does Ada live"})],
            [("forget", {"category": "fact", "key": "home_city"}), ("forget", {"id": "mem_missing"})],
            "Done: Ada lives in Paris.",
        ]
    )
    agent = Agent(
        name="assistant",
        instructions=_agent_tools.TABLE["instructions"],
        model=model,
        tools=tools(mind.agent),
    )
    # When the SDK's runner runs it
    result = Runner.run_sync(agent, "Ada moved to Paris.")
    # Then the final text is the model's, and each tool's output went back to the model
    assert result.final_output == "Done: Ada lives in Paris."
    seen = outputs(model)
    assert json.loads(seen["call_1_0"])["key"] == "home_city"
    assert "Ada lives in Paris" in seen["call_2_0"]
    assert json.loads(seen["call_3_0"])["deleted"].startswith("mem_")
    assert seen["call_3_1"].startswith("Error: ")
    # And the memory is gone from the mind
    assert mind.agent.find("fact", "home_city") is None
