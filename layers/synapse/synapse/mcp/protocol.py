"""MCP Streamable HTTP (revision 2025-11-25; 2025-06-18 and 2025-03-26 clients too), stateless.

Every POST carries one JSON-RPC message and a request is answered on that POST with
`application/json` (or one `text/event-stream` event for a client that accepts only that); a
notification or a response gets 202 and no body; GET and DELETE are 405 (no sessions, no stream);
a batch array is answered for 2025-03-26, which requires receiving them, and refused for newer
revisions (2025-06-18 removed batching). In order, a request passes: its Origin (a browser's must be
in SYNAPSE_MCP_ORIGINS, else 403; none is fine), the credential (401 with WWW-Authenticate), its
query (400 for a parameter other than `mind_id`), the method, its MCP-Protocol-Version (400 when
unsupported; absent means 2025-03-26), its Accept (the spec has clients list both media types; the
server is lenient: absent or either one will do, 406 only when neither is acceptable, `q=0`
included), then JSON-RPC. Malformed input is a JSON-RPC error, never a 500.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

from botocore.exceptions import ClientError

from synapse.api import routes
from synapse.api.http import Request, Response, error_response
from synapse.auth.principal import Principal
from synapse.core import json_input
from synapse.core.errors import BadRequest, SynapseError, Unauthorized
from synapse.mcp import rpc
from synapse.oauth import urls

SUPPORTED_VERSIONS = rpc.SUPPORTED_VERSIONS
ASSUMED_VERSION = "2025-03-26"  # what a request without MCP-Protocol-Version speaks (the spec's rule)
MAX_BODY_BYTES = 1024 * 1024  # remember_many: up to 100 memories of up to 32 KiB of content
ALLOW = {"Allow": "POST"}


def _jsonrpc_error(
    code: int, message: str, status: int, data: Any = None, request_id: Any = None
) -> Response:
    return Response.json(rpc.error(request_id, code, message, data), status=status)


@cache
def allowed_origins() -> frozenset[str]:
    """Browser origins allowed to call /mcp (SYNAPSE_MCP_ORIGINS, comma-separated; none by default)."""
    raw = os.environ.get("SYNAPSE_MCP_ORIGINS", "")
    return frozenset(part.strip().rstrip("/").lower() for part in raw.split(",") if part.strip())


def _origin_refusal(request: Request) -> Response | None:
    """403 for a browser Origin not allowed (DNS rebinding, cross-site pages); none is fine."""
    origin = request.headers.get("origin")
    if origin is not None and origin.strip().rstrip("/").lower() not in allowed_origins():
        return _jsonrpc_error(rpc.INVALID_REQUEST, f"Origin {origin[:100]!r} is not allowed.", 403)
    return None


def _transport_refusal(request: Request) -> Response | None:
    """The HTTP-level answer for a request the transport refuses before reading it, else None."""
    method = ((request.event.get("requestContext") or {}).get("http") or {}).get("method", "POST")
    if method.upper() != "POST":
        answer = _jsonrpc_error(
            rpc.INVALID_REQUEST, f"{method} /mcp: this server is stateless; POST only.", 405
        )
        return answer._replace(headers={**answer.headers, **ALLOW})
    asked = request.headers.get("mcp-protocol-version")
    if asked is not None and asked.strip() not in SUPPORTED_VERSIONS:
        supported = list(SUPPORTED_VERSIONS)
        message = f"MCP-Protocol-Version {asked[:40]!r} is not supported; use one of {', '.join(supported)}."
        return _jsonrpc_error(
            rpc.INVALID_REQUEST, message, 400, {"supported": supported, "requested": asked[:40]}
        )
    return None


def version(request: Request) -> str:
    """The revision a (supported) request speaks: its MCP-Protocol-Version, 2025-03-26 without one."""
    return (request.headers.get("mcp-protocol-version") or "").strip() or ASSUMED_VERSION


def _credential(request: Request) -> Principal:
    """The caller, as the authorizer resolved it: a Mind Key, a JWT or an OAuth access token."""
    return request.principal


def _challenge(error: Unauthorized, request: Request) -> Response:
    """The 401 MCP's authorization spec asks for: `WWW-Authenticate: Bearer` naming the protected
    resource metadata (RFC 9728 §5.1), so a connector discovers the authorization server from it;
    `error="invalid_token"` when a credential was presented (RFC 6750 §3)."""
    base = urls.base_url(request.event)
    parameters = [f'resource_metadata="{urls.resource_metadata_url(base)}"']
    if request.headers.get("authorization") or request.headers.get("x-mind-key"):
        description = error.message.replace('"', "'").replace("\\", "/")
        parameters[:0] = ['error="invalid_token"', f'error_description="{description}"']
    answer = error_response(error, request.request_id)
    return answer._replace(headers={**answer.headers, "WWW-Authenticate": "Bearer " + ", ".join(parameters)})


def _accepts(request: Request) -> str | None:
    """The answer's media type: JSON unless the client accepts only SSE; None when it takes neither."""
    accept = request.headers.get("accept", "").lower()
    if not accept.strip():
        return "application/json"
    kinds = {kind for kind, quality in map(_media_range, accept.split(",")) if quality > 0}
    if kinds & {"application/json", "application/*", "*/*"}:
        return "application/json"
    return "text/event-stream" if "text/event-stream" in kinds else None


def _media_range(part: str) -> tuple[str, float]:
    """One Accept entry as (media type, q): `text/event-stream;q=0` is (…, 0.0), i.e. not acceptable."""
    kind, *parameters = (piece.strip() for piece in part.split(";"))
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip() == "q":
            try:
                return kind, float(value)
            except ValueError:
                return kind, 1.0
    return kind, 1.0


def parse(raw: bytes) -> Any:
    """The body's JSON syntax as every door reads it (`core.json_input`), or rpc.Failure(-32700)
    naming why not. Its text (no lone surrogate) is checked per message by `rpc`, so that a bad
    argument is answered as invalid params with the message's id."""
    try:
        return json_input.parse(raw)
    except json_input.Unreadable as error:
        raise rpc.Failure(rpc.PARSE_ERROR, f"Parse error: the body {error.message}.") from None


def _render(payload: dict[str, Any] | list[dict[str, Any]], media: str) -> Response:
    if media == "application/json":
        return Response.json(payload)
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Response(200, f"event: message\ndata: {data}\n\n", {"Content-Type": "text/event-stream"})


def _message(request: Request) -> Any:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type and content_type != "application/json":
        raise rpc.Failure(
            rpc.INVALID_REQUEST, f"Send JSON-RPC with Content-Type: application/json, not {content_type!r}."
        )
    try:
        raw = request.raw_body(MAX_BODY_BYTES)
    except SynapseError as error:
        raise rpc.Failure(rpc.INVALID_REQUEST, error.message) from None
    return parse(raw)


def handle(request: Request) -> Response:
    """One POST /mcp (or a refused GET/DELETE), answered."""
    refused = _origin_refusal(request)
    if refused is not None:
        return refused
    try:
        principal = _credential(request)
    except Unauthorized as error:  # before the method: every route without a credential is a 401
        return _challenge(error, request)
    try:
        routes.check_query(request.event.get("routeKey"), request.query)
    except BadRequest as error:  # a query parameter /mcp does not take (it takes mind_id)
        return _jsonrpc_error(rpc.INVALID_REQUEST, error.message, 400, {"details": error.details})
    refused = _transport_refusal(request)
    if refused is not None:
        return refused
    media = _accepts(request)
    if media is None:
        return _jsonrpc_error(rpc.INVALID_REQUEST, "Accept application/json or text/event-stream.", 406)
    try:
        message = _message(request)
        answer = rpc.answer(message, principal, request.addressed, version(request))
    except rpc.Failure as failure:
        return _jsonrpc_error(failure.code, failure.message, 400, failure.data, failure.request_id)
    except ClientError:
        return _jsonrpc_error(rpc.SERVER_BUSY, "The database is busy right now; retry shortly.", 503)
    if answer is None:
        return Response.empty(202)
    return _render(answer, media)
