"""synapse.mcp's transport, JSON-RPC and argument rules in isolation: a Lambda event in, the Response
out, no database (only methods that need no mind are called; tools/call stops at its arguments).
The same rules end to end, through the gateway and the SDK, are in tests/integration/test_mcp_http.py
and tests/clients/test_mcp_remote.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from synapse.api.http import Addressed, Request, Response
from synapse.auth.principal import Principal
from synapse.mcp import arguments, protocol, rpc, schema
from synapse.memory.kinds import Source

AGENT = Principal(source=Source.AGENT, key_id="key_1", mind_id="m_1", scopes=frozenset({"read", "write"}))
BOTH = "application/json, text/event-stream"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def no_mind() -> Addressed:
    raise AssertionError("these tests never reach a tool's body")


def event(
    body: Any = PING,
    *,
    principal: Principal | None = AGENT,
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> Request:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"content-type": "application/json", "accept": BOTH}
    sent.update({name.replace("_", "-"): value for name, value in (headers or {}).items()})
    context: dict[str, Any] = {"http": {"method": method}}
    if principal is not None:
        context["authorizer"] = {"lambda": principal.to_context()}
    encoded = base64.b64encode(raw).decode()  # as API Gateway passes a body it cannot read as text
    shaped = {"headers": sent, "body": encoded, "isBase64Encoded": True, "requestContext": context}
    return Request.from_event(shaped, "req-1")


def handled(body: Any = PING, **headers: str) -> Response:
    return protocol.handle(event(body, headers=headers))


def parsed(answer: Response) -> Any:
    return json.loads(answer.body)


@pytest.fixture
def origins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SYNAPSE_MCP_ORIGINS", "https://app.example, HTTPS://Other.Example/")
    protocol.allowed_origins.cache_clear()
    yield
    protocol.allowed_origins.cache_clear()


# ------------------------------------------------------------ MCP-Protocol-Version


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", " 2025-06-18 "])
def test_a_supported_protocol_version_is_served(version: str) -> None:
    # Given a ping carrying a revision the server speaks
    # When it is handled
    answer = handled(mcp_protocol_version=version)
    # Then it is answered as JSON
    assert answer.status == 200 and parsed(answer) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("version", ["2024-11-05", "2099-01-01", "latest", "", "2025-11-25, 2025-06-18"])
def test_an_unsupported_or_invalid_protocol_version_is_a_400_naming_the_supported_ones(version: str) -> None:
    # Given a request with a version the server does not speak (or not a version at all)
    # When it is handled
    answer = handled(mcp_protocol_version=version)
    # Then it is 400 Bad Request, a JSON-RPC error without an id that lists what is supported
    assert answer.status == 400
    error = parsed(answer)["error"]
    assert parsed(answer)["id"] is None and error["code"] == rpc.INVALID_REQUEST
    assert error["data"]["supported"] == list(rpc.SUPPORTED_VERSIONS)


def test_without_a_version_header_the_request_speaks_2025_03_26() -> None:
    # Given a request without MCP-Protocol-Version
    request = event()
    # Then the server assumes 2025-03-26 (the spec's backwards-compatible default) and serves it
    assert protocol.version(request) == "2025-03-26"
    assert protocol.handle(request).status == 200


@pytest.mark.parametrize(
    ("asked", "agreed"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ],
)
def test_initialize_agrees_the_asked_version_or_offers_the_latest(asked: str, agreed: str) -> None:
    # Given an initialize asking for a revision
    message = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": asked}}
    # When it is answered
    result = parsed(handled(message))["result"]
    # Then the server agrees to it when it speaks it, else offers its latest (the client decides)
    assert result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "synapse" and result["instructions"] == schema.INSTRUCTIONS


# ------------------------------------------------------------ Origin


@pytest.mark.usefixtures("origins")
@pytest.mark.parametrize("origin", ["https://app.example", "https://APP.example/", "https://other.example"])
def test_an_allowed_origin_is_served(origin: str) -> None:
    assert handled(origin=origin).status == 200


@pytest.mark.usefixtures("origins")
@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://app.example", "https://app.example:8443", "null", ""]
)
def test_any_other_origin_is_a_403_before_the_credential(origin: str) -> None:
    # Given a browser page's Origin not in the allow-list, and no credential at all
    request = event(principal=None, headers={"origin": origin})
    # When it is handled
    answer = protocol.handle(request)
    # Then it is 403 (DNS rebinding, cross-site pages), not 401: the Origin is checked first
    assert answer.status == 403 and parsed(answer)["error"]["code"] == rpc.INVALID_REQUEST


def test_no_origins_are_allowed_by_default_and_no_origin_is_fine() -> None:
    protocol.allowed_origins.cache_clear()
    assert handled(origin="https://app.example").status == 403
    assert handled().status == 200


# ------------------------------------------------------------ credential and method


def test_no_credential_is_a_401_with_a_bearer_challenge() -> None:
    answer = protocol.handle(event(principal=None))
    assert answer.status == 401


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post_is_served(method: str) -> None:
    answer = protocol.handle(event(method=method, headers={"accept": "text/event-stream"}))
    assert answer.status == 405 and answer.headers["Allow"] == "POST"


# ------------------------------------------------------------ Accept


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (BOTH, "application/json"),
        ("text/event-stream, application/json", "application/json"),
        ("application/json", "application/json"),
        ("application/*", "application/json"),
        ("*/*", "application/json"),
        ("", "application/json"),
        ("text/event-stream", "text/event-stream"),
        ("application/json;q=0, text/event-stream", "text/event-stream"),
        ("Application/JSON; charset=utf-8", "application/json"),
    ],
)
def test_the_answer_takes_a_media_type_the_client_accepts(accept: str, media: str) -> None:
    # Given a request whose Accept lists these types (the spec has clients list both)
    # When it is answered
    answer = handled(accept=accept)
    # Then JSON when the client takes it, else one SSE event carrying the same JSON-RPC response
    assert answer.status == 200 and answer.headers["Content-Type"].startswith(media)
    if media == "text/event-stream":
        assert answer.body.startswith("event: message\ndata: ") and answer.body.endswith("\n\n")
        assert json.loads(answer.body.split("data: ", 1)[1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    "accept", ["text/html", "image/png, text/plain", "application/json;q=0", "text/event-stream;q=0.0"]
)
def test_a_client_accepting_neither_media_type_is_a_406(accept: str) -> None:
    answer = handled(accept=accept)
    assert answer.status == 406 and parsed(answer)["error"]["code"] == rpc.INVALID_REQUEST


def test_a_body_that_is_not_json_by_its_content_type_is_refused() -> None:
    answer = handled(content_type="text/plain")
    assert answer.status == 400 and parsed(answer)["error"]["code"] == rpc.INVALID_REQUEST


# ------------------------------------------------------------ JSON-RPC


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", rpc.PARSE_ERROR),
        (b"", rpc.PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":NaN}', rpc.PARSE_ERROR),
        (b"\xff\xfe", rpc.PARSE_ERROR),
        (b"[" * 40 + b"]" * 40, rpc.PARSE_ERROR),
        (b'"ping"', rpc.INVALID_REQUEST),
        (b"7", rpc.INVALID_REQUEST),
        (b"null", rpc.INVALID_REQUEST),
        (b"[]", rpc.INVALID_REQUEST),
        (b'{"id":1,"method":"ping"}', rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1}', rpc.INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', rpc.INVALID_REQUEST),
    ],
)
def test_a_body_that_is_not_one_json_rpc_message_is_a_400(body: bytes, code: int) -> None:
    # Given a body that does not parse, or is not a JSON-RPC 2.0 message
    # When it is handled
    answer = handled(body)
    # Then it is a 400 carrying the JSON-RPC error, never a 500
    assert answer.status == 400 and parsed(answer)["error"]["code"] == code


@pytest.mark.parametrize(
    ("message", "answered_id"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
        ({"jsonrpc": "2.0", "id": "abc", "method": 7}, "abc"),
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"id": 5, "method": "ping"}, 5),
    ],
)
def test_an_invalid_request_whose_id_can_be_read_is_answered_with_it(message: Any, answered_id: Any) -> None:
    # JSON-RPC 2.0 §5: the id is null only when it could not be detected
    assert parsed(handled(message))["id"] == answered_id


@pytest.mark.parametrize("request_id", [True, None, 1.5, [1], {"n": 1}])
def test_an_id_of_the_wrong_type_is_an_invalid_request(request_id: Any) -> None:
    # Given a request whose id is neither a string nor an integer (MCP: never null)
    answer = handled({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    # Then it is -32600 with a null id
    assert answer.status == 400
    assert parsed(answer) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": rpc.INVALID_REQUEST,
            "message": "Invalid request: id must be a string or an integer.",
        },
    }


@pytest.mark.parametrize("request_id", [0, -3, 2**53, "", "req-7"])
def test_string_and_integer_ids_are_echoed(request_id: Any) -> None:
    assert parsed(handled({**PING, "id": request_id}))["id"] == request_id


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "nope/unknown"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": "s-1", "error": {"code": -1, "message": "no"}},
    ],
)
def test_notifications_and_responses_are_202_without_a_body(message: dict[str, Any]) -> None:
    answer = handled(message)
    assert (answer.status, answer.body) == (202, "")
    assert "Content-Type" not in answer.headers


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("prompts/get", {}, rpc.METHOD_NOT_FOUND),
        ("tools/lists", {}, rpc.METHOD_NOT_FOUND),
        ("", {}, rpc.METHOD_NOT_FOUND),
        ("tools/list", [1], rpc.INVALID_PARAMS),
        ("tools/list", None, rpc.INVALID_PARAMS),
        ("tools/call", {"name": 7}, rpc.INVALID_PARAMS),
        ("tools/call", {"name": "nope"}, rpc.INVALID_PARAMS),
        ("initialize", {}, rpc.INVALID_PARAMS),
        ("initialize", {"protocolVersion": 20250618}, rpc.INVALID_PARAMS),
        ("resources/read", {}, rpc.INVALID_PARAMS),
        ("resources/read", {"uri": "synapse://nope"}, rpc.RESOURCE_NOT_FOUND),
    ],
)
def test_unknown_methods_and_bad_params_are_errors_answered_with_the_id(
    method: str, params: Any, code: int
) -> None:
    # Given a well-formed request for a method that does not exist or with params it cannot take
    answer = handled({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})
    # Then it is a JSON-RPC error response to that id (the HTTP exchange itself succeeded)
    assert answer.status == 200
    assert parsed(answer)["id"] == 9 and parsed(answer)["error"]["code"] == code


def test_the_error_messages_name_what_was_wrong() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}
    assert "'nope'" in parsed(handled(message))["error"]["message"]
    assert "'prompts/get'" in parsed(handled({**PING, "method": "prompts/get"}))["error"]["message"]


# ------------------------------------------------------------ batches


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_a_batch_is_refused_from_a_revision_without_batches(version: str) -> None:
    # Given a newer client's batch (2025-06-18 removed JSON-RPC batching)
    answer = handled([PING, {**PING, "id": 2}], mcp_protocol_version=version)
    # Then it is -32600, saying one message per POST
    assert answer.status == 400 and parsed(answer)["error"]["code"] == rpc.INVALID_REQUEST
    assert "one message per POST" in parsed(answer)["error"]["message"]


@pytest.mark.parametrize("headers", [{"mcp_protocol_version": "2025-03-26"}, {}])
def test_a_2025_03_26_batch_is_answered_in_order(headers: dict[str, str]) -> None:
    # Given a 2025-03-26 client's batch (that revision obliges servers to receive batches) mixing
    # requests, a notification, an unknown method and an invalid member
    batch = [
        PING,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "nope"},
        "garbage",
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
    ]
    # When it is answered
    answers = parsed(handled(batch, **headers))
    # Then each request has its answer, in order, the notification none, the bad member an error
    assert [answer["id"] for answer in answers] == [1, "b", None, 3]
    assert answers[1]["error"]["code"] == rpc.METHOD_NOT_FOUND
    assert answers[2]["error"]["code"] == rpc.INVALID_REQUEST
    assert {tool["name"] for tool in answers[3]["result"]["tools"]} >= {"remember", "recall"}


def test_a_batch_of_notifications_only_is_202_and_an_oversized_one_is_refused() -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert handled([note, {"jsonrpc": "2.0", "id": 1, "result": {}}]).status == 202
    oversized = handled([PING] * (rpc.MAX_BATCH + 1))
    assert oversized.status == 400 and parsed(oversized)["error"]["code"] == rpc.INVALID_REQUEST


# ------------------------------------------------------------ tools/list and scopes


@pytest.mark.parametrize(
    ("scopes", "listed"),
    [
        (frozenset({"read"}), {"recall", "search", "fetch", "by_tag", "list_expiring", "history"}),
        (frozenset({"write"}), {"remember", "remember_many", "update"}),
        (frozenset({"delete"}), {"forget"}),
    ],
)
def test_a_key_lists_only_the_tools_its_scopes_allow(scopes: frozenset[str], listed: set[str]) -> None:
    principal = Principal(source=Source.AGENT, key_id="k", mind_id="m", scopes=scopes)
    answer = rpc.answer({**PING, "method": "tools/list"}, principal, no_mind)
    assert isinstance(answer, dict)
    assert {tool["name"] for tool in answer["result"]["tools"]} == listed


def test_a_tool_the_key_lacks_the_scope_for_is_an_is_error_result() -> None:
    reader = Principal(source=Source.AGENT, key_id="k", mind_id="m", scopes=frozenset({"read"}))
    call = {**PING, "method": "tools/call", "params": {"name": "remember", "arguments": {"content": "x"}}}
    answer = rpc.answer(call, reader, no_mind)
    assert isinstance(answer, dict)
    assert answer["result"]["isError"] is True
    assert "lacks the 'write' scope" in answer["result"]["content"][0]["text"]


# ------------------------------------------------------------ arguments


def schema_of(name: str) -> dict[str, Any]:
    return schema.BY_NAME[name]["inputSchema"]


@pytest.mark.parametrize(
    ("tool", "given", "named"),
    [
        ("remember", {"content": "x", "colour": "red"}, "colour"),
        ("remember", {"content": "x", "Content": "y"}, "Content"),
        ("recall", {"q": "coffee"}, "q"),
        ("fetch", {"id": "mem_1", "verbose": True}, "verbose"),
        ("remember_many", {"memories": [{"content": "x", "kee": "k"}]}, "memories[0].kee"),
    ],
)
def test_an_unknown_argument_is_refused_naming_it(tool: str, given: dict[str, Any], named: str) -> None:
    # Given arguments with one the tool does not take
    # When they are checked against the tool's schema
    with pytest.raises(arguments.BadArguments) as refused:
        arguments.checked(given, schema_of(tool))
    # Then the refusal names it (never silently ignored) and says what the tool takes
    assert str(refused.value).startswith(f"{named}: not an argument of this tool")


@pytest.mark.parametrize(
    ("tool", "given", "message"),
    [
        ("remember", {"content": 7}, "content: must be string"),
        ("remember", {"content": "x", "tags": "coffee"}, "tags: must be array"),
        ("remember", {"content": "x", "tags": ["ok", 3]}, "tags[1]: must be string"),
        ("remember", {"content": "x", "confidence": "high"}, "confidence: must be number"),
        ("remember", {"content": "x", "confidence": True}, "confidence: must be number"),
        ("remember", {"content": "x", "confidence": 1.5}, "confidence: must be from 0 to 1"),
        ("remember", {"content": "x", "priority": "urgent"}, "priority: must be one of"),
        ("remember", {"content": "x", "category": "diary"}, "category: must be one of"),
        ("remember", {}, "content: is required"),
        ("search", {"query": "x", "limit": "5"}, "limit: must be integer"),
        ("search", {"query": "x", "limit": 5.0}, "limit: must be integer"),
        ("search", {"query": "x", "limit": 0}, "limit: must be from"),
        ("by_tag", {"tag": ""}, "tag: must not be empty"),
        ("fetch", {}, "id: is required"),
        ("remember_many", {"memories": []}, "memories: must hold"),
    ],
)
def test_an_argument_of_the_wrong_type_or_out_of_range_is_refused_naming_it(
    tool: str, given: dict[str, Any], message: str
) -> None:
    with pytest.raises(arguments.BadArguments) as refused:
        arguments.checked(given, schema_of(tool))
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("given", [None, {}])
def test_absent_arguments_are_none(given: Any) -> None:
    assert arguments.checked(given, schema_of("recall")) == {}


@pytest.mark.parametrize("given", [[], "content", 7])
def test_arguments_that_are_not_an_object_are_refused(given: Any) -> None:
    with pytest.raises(arguments.BadArguments, match="arguments: must be an object"):
        arguments.checked(given, schema_of("recall"))


def test_a_bad_argument_over_json_rpc_is_an_is_error_result_naming_it() -> None:
    call = {**PING, "method": "tools/call", "params": {"name": "recall", "arguments": {"colour": 1}}}
    result = parsed(handled(call))["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Invalid arguments for recall: colour: not an argument")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": 1e999}}', "too large"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": NaN}}', "NaN"),
        (b"[" * 40 + b"]" * 40, "nests deeper"),
        (b"\xff", "not valid JSON"),
    ],
)
def test_a_body_is_read_as_every_endpoint_reads_json(body: bytes, says: str) -> None:
    # Given a body the REST endpoints refuse (a number too large to be finite, NaN, deep nesting)
    # When /mcp reads it, Then it is a JSON-RPC parse error saying why, not a value that breaks later
    with pytest.raises(rpc.Failure) as caught:
        protocol.parse(body)
    assert caught.value.code == rpc.PARSE_ERROR and says in caught.value.message
