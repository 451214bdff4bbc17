"""JSON-RPC 2.0 for MCP: one message in, its answer out, and the methods a stateless server serves.

No session: `initialize` answers with the negotiated version, and every other request is answered
on its own, with or without an `initialize` before it. Errors follow JSON-RPC's codes: -32700
parse, -32600 invalid request, -32601 method not found, -32602 invalid params; an invalid request
whose id could be read is answered with that id (JSON-RPC 2.0 §5), else with a null one. A message
holding a lone UTF-16 surrogate is refused before anything runs, as REST refuses one (`core.json_input`):
in its params, invalid params naming the field; elsewhere, an invalid request. A tool's
own failure (bad arguments, a Synapse refusal, a missing scope) is an `isError` result the model can
read. Batches (arrays of messages) are part of 2025-03-26 only, which obliges a server to receive
them; 2025-06-18 removed them, so a newer client's batch is refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from synapse.api.http import Addressed
from synapse.auth import visibility
from synapse.auth.principal import Principal
from synapse.core import json_input
from synapse.core.errors import SynapseError
from synapse.core.observability import logger
from synapse.mcp import arguments, calls, schema
from synapse.teams import roles

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_BUSY = -32000  # implementation-defined: the database shed load; retry
REFUSED = -32001  # implementation-defined: Synapse refused (scope, rate limit, no such mind…)
RESOURCE_NOT_FOUND = -32002
LATEST_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
BATCH_VERSION = "2025-03-26"  # the one revision with JSON-RPC batches
MAX_BATCH = 10  # messages per batch: one POST's work stays within one Lambda's timeout
SERVER_INFO = {"name": "synapse", "title": "Synapse memory", "version": "0.1.0"}
CAPABILITIES = {"tools": {"listChanged": False}, "resources": {"subscribe": False, "listChanged": False}}

MindOf = Callable[[], Addressed]  # the mind the request addresses, and a person's role on it


class Failure(Exception):
    """A JSON-RPC error: raised by a method (answered with the request's id) or by the transport."""

    def __init__(self, code: int, message: str, data: Any = None, request_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data, self.request_id = code, message, data, request_id


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def answer(
    message: Any, principal: Principal, mind_of: MindOf, version: str = BATCH_VERSION
) -> dict[str, Any] | list[dict[str, Any]] | None:
    """The answer to one POST's body: None when it holds only notifications or responses (202), else
    a JSON-RPC response (a list of them for a 2025-03-26 batch). A body that is not a JSON-RPC
    message raises Failure (the transport's 400)."""
    if isinstance(message, list):
        return _batch(message, principal, mind_of, version)
    return _one(message, principal, mind_of)


def _batch(
    messages: list[Any], principal: Principal, mind_of: MindOf, version: str
) -> list[dict[str, Any]] | None:
    if version != BATCH_VERSION:
        raise Failure(
            INVALID_REQUEST,
            f"Batches are not part of MCP {version} (2025-06-18 removed them): one message per POST.",
        )
    if not 1 <= len(messages) <= MAX_BATCH:
        raise Failure(INVALID_REQUEST, f"Invalid request: a batch holds 1 to {MAX_BATCH} messages.")
    answers = []
    for message in messages:
        try:
            answered = _one(message, principal, mind_of)
        except Failure as failure:
            answered = error(failure.request_id, failure.code, failure.message, failure.data)
        if answered is not None:
            answers.append(answered)
    return answers or None


def _one(message: Any, principal: Principal, mind_of: MindOf) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        raise Failure(INVALID_REQUEST, "Invalid request: send one JSON-RPC 2.0 object.")
    not_text = json_input.lone_surrogate(message)
    readable_id = message.get("id") if _is_id(message.get("id")) and not_text != "id" else None
    if not_text is not None:
        return _not_text(message, not_text, readable_id)
    if message.get("jsonrpc") != "2.0":
        raise Failure(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".', None, readable_id)
    if "method" not in message:
        if readable_id is not None and ("result" in message or "error" in message):
            return None  # a response to a request we never send: accepted, nothing to do
        raise Failure(INVALID_REQUEST, "Invalid request: a request needs a method.", None, readable_id)
    method, params = message["method"], message.get("params", {})
    if not isinstance(method, str):
        raise Failure(INVALID_REQUEST, "Invalid request: method must be a string.", None, readable_id)
    if "id" not in message:
        return None  # a notification (initialized, cancelled, …): nothing to answer
    request_id = message["id"]
    if readable_id is None:
        raise Failure(INVALID_REQUEST, "Invalid request: id must be a string or an integer.")
    if not isinstance(params, dict):
        return error(request_id, INVALID_PARAMS, "Invalid params: params must be an object.")
    try:
        result = dispatch(method, params, principal, mind_of)
    except Failure as failure:
        return error(request_id, failure.code, failure.message, failure.data)
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _not_text(message: dict[str, Any], field: str, readable_id: Any) -> dict[str, Any] | None:
    """A message holding a lone surrogate at `field`, refused before anything runs (REST's 400): in
    its params, invalid params answered with its id (nothing for a notification); elsewhere
    (`id`, `method`, …), an invalid request."""
    said = f"{field} {json_input.SURROGATE_MESSAGE}."
    data = {"field": field, "rule": json_input.SURROGATE_RULE}
    if field.startswith("params") and "id" in message and readable_id is not None:
        return error(readable_id, INVALID_PARAMS, f"Invalid params: {said}", data)
    if field.startswith("params") and "id" not in message and isinstance(message.get("method"), str):
        return None  # a notification: nothing runs, nothing to answer
    raise Failure(INVALID_REQUEST, f"Invalid request: {said}", data, readable_id)


def initialize(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    if not isinstance(asked, str):
        raise Failure(INVALID_PARAMS, "Invalid params: initialize needs protocolVersion (a string).")
    return {
        "protocolVersion": asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": schema.INSTRUCTIONS,
    }


def _allowed(principal: Principal, scope: str) -> bool:
    return principal.is_user or scope in principal.scopes


def _text_result(result: calls.Result, is_error: bool = False) -> dict[str, Any]:
    shown = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return {"content": [{"type": "text", "text": shown}], "isError": is_error}


def _caller(principal: Principal, mind_of: MindOf, scope: str) -> calls.Caller:
    """Who calls a tool, on which mind: a person needs editor for a tool that writes or deletes
    (viewer, to read, is the route's rule: `routes.ROUTE_ROLES`)."""
    found = mind_of()
    if found.role is not None and scope != "read" and not roles.at_least(found.role, roles.EDITOR):
        raise roles.lacking(roles.EDITOR, found.role)
    return calls.Caller(principal, found.mind_id, found.vouches)


def call_tool(params: dict[str, Any], principal: Principal, mind_of: MindOf) -> dict[str, Any]:
    name = params.get("name")
    tool = schema.BY_NAME.get(name) if isinstance(name, str) else None
    if tool is None:
        raise Failure(INVALID_PARAMS, f"Unknown tool: {str(name)[:80]!r}. tools/list names the tools.")
    try:
        checked = arguments.checked(params.get("arguments"), tool["inputSchema"])
        principal.require_scope(tool["scope"])
        result = calls.TOOLS[tool["name"]](_caller(principal, mind_of, tool["scope"]), checked)
        # every tool's answer as the caller may see it: no memory's text without `read` (auth.visibility)
        return _text_result(visibility.shown(principal, result))
    except arguments.BadArguments as refused:
        return _text_result(f"Invalid arguments for {tool['name']}: {refused}", is_error=True)
    except SynapseError as refused:
        return _text_result(refused.message, is_error=True)
    except ClientError:
        logger.exception("Database error in an MCP tool")
        return _text_result("The database is busy right now; retry shortly.", is_error=True)


def read_resource(params: dict[str, Any], principal: Principal, mind_of: MindOf) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise Failure(INVALID_PARAMS, "Invalid params: resources/read needs a uri (a string).")
    known = {resource["uri"]: resource for resource in schema.RESOURCES}
    if uri not in known:
        raise Failure(RESOURCE_NOT_FOUND, f"Resource not found: {uri[:200]!r}.", {"uri": uri[:200]})
    try:
        principal.require_scope(known[uri]["scope"])
        shown = calls.recall_text(_caller(principal, mind_of, known[uri]["scope"]))
    except SynapseError as refused:
        raise Failure(REFUSED, refused.message, {"status": refused.status, "code": refused.code}) from None
    return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": shown}]}


def dispatch(method: str, params: dict[str, Any], principal: Principal, mind_of: MindOf) -> Any:
    """A request's result by its method; an unknown method is -32601."""
    if method == "initialize":
        return initialize(params)
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [schema.listed(t) for t in schema.TOOLS if _allowed(principal, t["scope"])]}
    if method == "tools/call":
        return call_tool(params, principal, mind_of)
    if method == "resources/list":
        shown = [{k: v for k, v in r.items() if k != "scope"} for r in schema.RESOURCES]
        return {
            "resources": [
                r for r, s in zip(shown, schema.RESOURCES, strict=True) if _allowed(principal, s["scope"])
            ]
        }
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "resources/read":
        return read_resource(params, principal, mind_of)
    raise Failure(METHOD_NOT_FOUND, f"Method not found: {method[:80]!r}.")
