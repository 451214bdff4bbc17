"""The JSON-RPC 2.0 messages of MCP over `POST /mcp` (synapse.mcp), as pydantic models that only
describe them in the OpenAPI document (`synapse.openapi.document`), as `schemas` does the rest.

A message the document calls valid is one the transport takes: a request (`method`, and an `id` that
is a string or an integer) or a notification (no `id`), or a client's response (`id` and `result` or
`error`, no `method`); a batch array (MCP 2025-03-26 only) is left out. Its error answers, but a
401's, are JSON-RPC error objects (`JsonRpcAnswer`), not the Error envelope.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema


def _no_default(schema: JsonDict) -> None:
    """An optional field that is never null: its schema holds no `default: null`."""
    schema.pop("default", None)


class JsonRpcRequest(BaseModel):
    """A JSON-RPC 2.0 request (answered on the POST), or without `id` a notification (202)."""

    model_config = ConfigDict(extra="allow")
    jsonrpc: Literal["2.0"]
    method: str = Field(description="initialize, ping, tools/list, tools/call, resources/…")
    # Optional, never null (the schema leaves None out): a request without `id` is a notification.
    id: str | int | SkipJsonSchema[None] = Field(
        None, description="Left out: a notification.", json_schema_extra=_no_default
    )
    params: dict[str, Any] = Field(default_factory=dict)


class JsonRpcReply(BaseModel):
    """A client's JSON-RPC 2.0 response, to a request the server never sends: accepted (202)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "anyOf": [{"required": ["result"]}, {"required": ["error"]}],
            "not": {"required": ["method"]},
        },
    )
    jsonrpc: Literal["2.0"]
    id: str | int
    result: dict[str, Any] | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)
    error: dict[str, Any] | SkipJsonSchema[None] = Field(None, json_schema_extra=_no_default)


class JsonRpcMessage(RootModel[JsonRpcRequest | JsonRpcReply]):
    """One JSON-RPC 2.0 message of MCP (a request, a notification or a response); no batch arrays."""


class JsonRpcAnswer(BaseModel):
    """A JSON-RPC 2.0 response: a `result`, or an `error` (also what the transport refuses with)."""

    model_config = ConfigDict(extra="allow")
    jsonrpc: Literal["2.0"]
    id: str | int | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = Field(None, description="code (-32700, -32600, -32601, -32602…), message")


class JsonRpcAnswers(RootModel[JsonRpcAnswer | list[JsonRpcAnswer]]):
    """What POST /mcp answers a request with: one JSON-RPC response, or for a batch (MCP 2025-03-26)
    the list of them."""
