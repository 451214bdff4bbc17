"""Synapse for LangChain (`pip install 'synapse-client[langchain]'`): `SynapseRetriever`, a retriever
over Synapse search, and `tools(client)`, the remember/recall/search/forget tools with the MCP
tools' descriptions and input schemas (mcp_tools.json)."""

from __future__ import annotations

import json
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import StructuredTool, ToolException
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "synapse_client.langchain needs LangChain: pip install 'synapse-client[langchain]'"
    ) from missing
from pydantic import ConfigDict

from synapse_client import _agent_tools
from synapse_client.client import Synapse
from synapse_client.errors import SynapseError


class SynapseRetriever(BaseRetriever):
    """The `k` best Synapse search hits for a query, as Documents: `page_content` is the memory's
    content; metadata holds its id, category, key, tags, score, matched terms and coverage."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Synapse
    k: int = 4
    tag: str | None = None
    category: str | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        found = self.client.search(query, tag=self.tag, category=self.category, limit=self.k)
        return [
            Document(
                page_content=hit.memory.content,
                id=hit.memory.id,
                metadata={
                    "id": hit.memory.id,
                    "category": hit.memory.category,
                    "key": hit.memory.key,
                    "tags": hit.memory.tags,
                    "score": hit.score,
                    "matched": hit.matched,
                    "coverage": hit.coverage,
                    "verified": hit.memory.verified,
                },
            )
            for hit in found.items
        ]


def _tool(client: Synapse, name: str) -> StructuredTool:
    spec = _agent_tools.SPECS[name]

    def call(**arguments: Any) -> str:
        try:
            answer = _agent_tools.run(client, name, arguments)
        except (SynapseError, ValueError) as error:
            raise ToolException(str(error)) from error
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)

    return StructuredTool.from_function(
        func=call,
        name=name,
        description=spec["description"],
        args_schema=spec["inputSchema"],
        handle_tool_error=True,
    )


def tools(client: Synapse) -> list[StructuredTool]:
    """remember, recall, search and forget as LangChain tools over `client`'s mind; a Synapse error
    comes back to the model as the tool's answer (its message), not as an exception."""
    return [_tool(client, name) for name in _agent_tools.NAMES]
