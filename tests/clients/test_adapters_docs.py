"""docs/agents.md's framework examples, run as written against a real `make run` (its URL and Mind
Key swapped for the runner's and a fresh mind's), so the copy-paste code is the tested code."""

from __future__ import annotations

import re

import pytest

from tests.clients.conftest import MindClients
from tests.support.runner import ROOT, RunningService

DOC = (ROOT / "docs" / "agents.md").read_text()
SECTIONS = (
    "## LangGraph: `SynapseStore`",
    "## LangChain: a retriever and tools",
    "## OpenAI Agents SDK: function tools",
)


def example(heading: str) -> str:
    section = DOC.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, heading
    return str(blocks[0])


@pytest.mark.parametrize("heading", SECTIONS)
def test_each_framework_example_runs_as_written(
    heading: str, runner: RunningService, mind: MindClients, capsys: pytest.CaptureFixture[str]
) -> None:
    code = example(heading).replace("http://127.0.0.1:3000", runner.url).replace("mk_…", mind.key)
    exec(compile(code, f"docs/agents.md {heading}", "exec"), {"__name__": "docs_example"})  # noqa: S102
    if "LangGraph" in heading:
        assert "[{'text': 'Uses Neovim'}]" in capsys.readouterr().out
        tagged = mind.agent.iter_by_tag("app:langgraph:ns:preference/ada")
        assert [memory.category for memory in tagged] == ["preference"]
    if "LangChain" in heading:
        stored = mind.agent.list_memories(category="preference").items
        assert [memory.content for memory in stored] == ["Ada prefers dark mode"]
