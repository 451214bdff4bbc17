"""Text that is not text (issue 32, item 1): a lone UTF-16 surrogate ("\\ud800" as a JSON escape) is
refused at every door before anything is stored, naming the field: REST, /mcp, inbound hooks,
batches (and so imports, which send batches). A mind that holds one from before reads again:
its values come back with U+FFFD, and the indexer indexes the memory instead of giving up on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer
from moto.dynamodb.models import dynamo_type
from synapse.auth.principal import Principal
from synapse.core import json_input
from synapse.lifecycle import text_repair
from synapse.mcp import calls
from synapse.memory.kinds import Source

from infra import repair_text
from infra.stream_pump import Pump
from tests.integration.test_hooks import create_hook, deliver
from tests.support import backups
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import ok
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MEMORIES, mind_items, scan

LONE = "\ud800"
JSON_AND_SSE = "application/json, text/event-stream"


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def mcp(api: Api, mind: MindHandle, message: Any, **headers: str) -> Any:
    """POST /mcp with `message` as JSON (a lone surrogate goes out as its escape, as a client sends it)."""
    sent = {"content-type": "application/json", "accept": JSON_AND_SSE, **headers}
    return api.call("POST", "/mcp", token=mind.key, raw_body=json.dumps(message).encode(), headers=sent)


def call(tool: str, request_id: Any = 7, **arguments: Any) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def readable(api: Api, mind: MindHandle) -> dict[str, Any]:
    """Every read the review found broken, as the owner: status codes, and the memories listed."""
    as_owner = {"X-Mind-Id": mind.id}
    listed = api.call("GET", "/memory", token=mind.jwt, headers=as_owner)
    return {
        "recall": api.call("GET", "/memory/recall", token=mind.jwt, headers=as_owner).status,
        "list": listed.status,
        "notes": api.call(
            "GET", "/memory", token=mind.jwt, headers=as_owner, query={"category": "note"}
        ).status,
        "backup": api.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt).status,
        "memories": listed.json().get("memories") if listed.status == 200 else None,
    }


NOTHING_STORED = {"recall": 200, "list": 200, "notes": 200, "backup": 200, "memories": []}


# ---------------------------------------------------------------- /mcp


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"content": "Likes tea", "tags": [LONE]}, "params.arguments.tags[0]"),
        ({"content": f"Likes tea {LONE}"}, "params.arguments.content"),
        ({"content": "Likes tea", "key": LONE}, "params.arguments.key"),
        ({"content": "Likes tea", "expires_at": LONE}, "params.arguments.expires_at"),
        ({"content": "Likes tea", f"x{LONE}": 1}, "params.arguments.x\ufffd"),
    ],
)
def test_mcp_remember_with_a_lone_surrogate_is_invalid_params_naming_it_and_stores_nothing(
    api: Api, mind: MindHandle, arguments: dict[str, Any], field: str
) -> None:
    # Given a write-scoped Mind Key
    # When it calls remember with a lone surrogate somewhere in the arguments
    answer = mcp(api, mind, call("remember", **arguments))
    # Then the message is answered (its id) with invalid params naming the field, not a 500
    assert answer.status == 200, answer.text
    error = answer.json()["error"]
    assert answer.json()["id"] == 7 and error["code"] == -32602
    assert error["data"] == {"field": field, "rule": "text"} and "lone UTF-16 surrogate" in error["message"]
    # And nothing was stored: every read of the mind answers, and it holds no memory
    assert readable(api, mind) == NOTHING_STORED


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (call("forget", category="note", key=LONE), "params.arguments.key"),
        (call("forget", id=f"mem_{LONE}"), "params.arguments.id"),
        (call("search", query=f"tea {LONE}"), "params.arguments.query"),
        (call("by_tag", tag=LONE), "params.arguments.tag"),
        (
            call("remember_many", memories=[{"content": "a"}, {"content": LONE}]),
            "params.arguments.memories[1].content",
        ),
        ({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": LONE}}, "params.uri"),
        (call(f"remember{LONE}"), "params.name"),
    ],
)
def test_every_tool_and_method_refuses_a_lone_surrogate_as_invalid_params(
    api: Api, mind: MindHandle, message: dict[str, Any], field: str
) -> None:
    # Given a memory the calls could touch
    assert api.store(mind, category="note", key="tea", content="Likes tea").status == 201
    # When a call carries a lone surrogate in its params
    answer = mcp(api, mind, message)
    # Then it is invalid params naming the field, and the memory is still there and readable
    assert (answer.status, answer.json()["error"]["code"]) == (200, -32602), answer.text
    assert answer.json()["error"]["data"]["field"] == field
    state = readable(api, mind)
    assert [m["key"] for m in state.pop("memories")] == ["tea"]
    assert state == {"recall": 200, "list": 200, "notes": 200, "backup": 200}


@pytest.mark.parametrize(
    ("message", "answered_id"),
    [
        ({"jsonrpc": "2.0", "id": LONE, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 3, "method": f"ping{LONE}"}, 3),
        ({"jsonrpc": f"2.0{LONE}", "id": 3, "method": "ping"}, 3),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", LONE: 1}, 3),
    ],
)
def test_a_lone_surrogate_outside_params_is_an_invalid_request(
    api: Api, mind: MindHandle, message: dict[str, Any], answered_id: Any
) -> None:
    # When the id, the method or the envelope holds a lone surrogate
    answer = mcp(api, mind, message)
    # Then the transport answers 400 with an invalid request, echoing the id only when it is text
    assert answer.status == 400, answer.text
    assert answer.json()["error"]["code"] == -32600 and answer.json()["id"] == answered_id
    assert answer.json()["error"]["data"]["rule"] == "text"


def test_in_a_batch_only_the_message_with_a_lone_surrogate_is_refused(api: Api, mind: MindHandle) -> None:
    # Given a 2025-03-26 batch: a poisoned remember, a good one, and a message whose id is poisoned
    good = call("remember", request_id=2, content="Likes tea")
    bad_id = {"jsonrpc": "2.0", "id": LONE, "method": "ping"}
    batch = [call("remember", request_id=1, content="x", tags=[LONE]), good, bad_id]
    # When it is sent
    answer = mcp(api, mind, batch, mcp_protocol_version="2025-03-26")
    # Then each message has its own answer: invalid params, a result, an invalid request (null id)
    assert answer.status == 200, answer.text
    first, second, third = answer.json()
    assert first["id"] == 1 and first["error"]["code"] == -32602
    assert second["id"] == 2 and second["result"]["isError"] is False
    assert third["id"] is None and third["error"]["code"] == -32600
    # And only the good memory was stored
    assert [m["content"] for m in readable(api, mind)["memories"]] == ["Likes tea"]


def test_a_notification_with_a_lone_surrogate_is_accepted_and_does_nothing(
    api: Api, mind: MindHandle
) -> None:
    answer = mcp(
        api, mind, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": LONE}}
    )
    assert (answer.status, answer.text) == (202, "")


# ---------------------------------------------------------------- REST, hooks, batches


def test_rest_names_the_field_that_holds_a_lone_surrogate(api: Api, mind: MindHandle) -> None:
    # When a REST body holds a lone surrogate in a tag
    answer = api.store(mind, tags=["ok", LONE])
    # Then it is a 400 naming the field and the rule
    assert answer.status == 400, answer.text
    assert answer.json()["error"]["details"] == [
        {
            "field": "tags[1]",
            "rule": "text",
            "message": "holds a lone UTF-16 surrogate (\\ud800-\\udfff): not text",
        }
    ]


def test_a_batch_with_a_lone_surrogate_in_any_item_is_refused_whole(api: Api, mind: MindHandle) -> None:
    # Given a batch (what `synapse import` sends) whose second item's content holds a lone surrogate
    body = {"memories": [memory_body(key="a"), memory_body(key="b", content=f"Lives in {LONE}")]}
    # When it is posted
    answer = api.call("POST", "/memory/batch", token=mind.key, json_body=body)
    # Then it is a 400 naming the item's field, and nothing was stored
    assert answer.status == 400, answer.text
    assert answer.json()["error"]["details"][0]["field"] == "memories[1].content"
    assert readable(api, mind) == NOTHING_STORED


def test_a_hook_delivery_with_a_lone_surrogate_is_refused_naming_it(api: Api, mind: MindHandle) -> None:
    # Given an inbound hook
    hook = create_hook(api, mind, label="voice-bot")
    # When a signed delivery carries a lone surrogate in a tag of its first memory
    answer = deliver(api, hook, {"memories": [memory_body(tags=[LONE])]})
    # Then it is a 400 naming the field, and nothing was stored
    assert answer.status == 400, answer.text
    assert answer.json()["error"]["details"][0]["field"] == "memories[0].tags[0]"
    assert readable(api, mind) == NOTHING_STORED


# ---------------------------------------------------------------- a mind that already holds one


@pytest.fixture
def lenient_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto that stores a lone surrogate, as DynamoDB Local did (moto sizes items as strict UTF-8)."""

    def bytesize(value: str | bytes) -> int:
        return len(value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass"))

    monkeypatch.setattr(dynamo_type, "bytesize", bytesize)
    yield


def poisoned(mind: MindHandle, dynamo: Any) -> str:
    """A memory stored as /mcp's remember stored one before its input was read as REST's (straight
    through the layer, a lone surrogate in a tag), then its content given one in the table itself.
    Returns its id."""
    principal = Principal(Source.AGENT, key_id=mind.key_id, mind_id=mind.id)
    arguments = {"content": "Lives in Berlin", "key": "home", "tags": [LONE, "city"]}
    stored = calls.remember(calls.Caller(principal, mind.id), arguments)
    assert isinstance(stored, dict)
    dynamo.update_item(
        TableName=MEMORIES,
        Key={"pk": {"S": mind.id}, "sk": {"S": "MEM#note#home"}},
        UpdateExpression="SET content = :c",
        ExpressionAttributeValues={":c": {"S": f"Lives in Berlin {LONE}"}},
    )
    raw = dynamo.get_item(TableName=MEMORIES, Key={"pk": {"S": mind.id}, "sk": {"S": "MEM#note#home"}})
    assert raw["Item"]["tags"]["L"][0]["S"] == LONE  # as stored, read without the service's repair
    return str(stored["id"])


def test_a_mind_holding_a_lone_surrogate_reads_again_with_replacement_characters(
    api: Api, mind: MindHandle, pump: Pump, lenient_moto: None, dynamo: Any
) -> None:
    # Given a mind that holds a memory with a lone surrogate in its content and tags
    memory_id = poisoned(mind, dynamo)
    # When its members read it
    state = readable(api, mind)
    # Then recall, lists and backup answer, showing U+FFFD where the surrogate was
    (shown,) = state.pop("memories")
    assert state == {"recall": 200, "list": 200, "notes": 200, "backup": 200}
    assert shown["content"] == "Lives in Berlin \ufffd" and shown["tags"] == ["\ufffd", "city"]
    as_owner = {"X-Mind-Id": mind.id}
    one = api.call("GET", f"/memory/{memory_id}", token=mind.jwt, headers=as_owner)
    assert one.status == 200 and one.json()["content"] == "Lives in Berlin \ufffd"
    history = api.call("GET", f"/memory/{memory_id}/history", token=mind.jwt, headers=as_owner)
    assert history.status == 200 and "\ufffd" in history.text
    recall = api.call("GET", "/memory/recall", token=mind.key)
    assert "Lives in Berlin \ufffd" in recall.text
    backup = api.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt)
    assert all(json.loads(line) for line in backup.text.splitlines())
    # And the indexer indexes it instead of giving up, so search finds it
    pump.run_once()
    assert pump.given_up == []
    found = api.call("GET", "/memory/search", token=mind.key, query={"q": "Berlin"})
    assert found.status == 200 and [r["memory"]["id"] for r in found.json()["results"]] == [memory_id]
    # And it can be changed and forgotten like any other memory
    fixed = api.store(mind, category="note", key="home", content="Lives in Hamburg", tags=["city"])
    assert fixed.status == 200, fixed.text
    assert api.call("DELETE", f"/memory/{memory_id}", token=mind.jwt, headers=as_owner).status == 204


def test_a_restore_line_with_a_lone_surrogate_is_refused_naming_the_line(api: Api, mind: MindHandle) -> None:
    # Given a backup, edited (and chained again) so that its memory's tag is a lone surrogate
    assert api.store(mind, tags=["home"]).status == 201
    lines = backups.backup(api, mind).splitlines()
    at = next(i for i, line in enumerate(lines) if b'"kind":"memory"' in line)
    record = json.loads(lines[at])
    record["memory"]["tags"] = [LONE]
    lines[at] = json.dumps(record).encode()
    # When it is restored into a new mind
    target = api.create_mind(name="Target")
    answer = backups.send(api, target, backups.rechained(lines), last=True)
    # Then the line is refused by the text rule, naming the field, and nothing is written
    assert answer.status == 422, answer.text
    assert answer.json()["error"]["details"][0] == {
        "line": at + 1,
        "field": "memory.tags[0]",
        "rule": "text",
        "message": "holds a lone UTF-16 surrogate (\\ud800-\\udfff): not text",
    }
    assert readable(api, target) == NOTHING_STORED


def test_the_one_off_repair_rewrites_a_mind_so_later_changes_leave_nothing_behind(
    api: Api, mind: MindHandle, lenient_moto: None, dynamo: Any
) -> None:
    # Given a mind holding a memory with a lone surrogate in its content and a tag
    poisoned(mind, dynamo)
    # When the one-off repair runs over it, twice
    first = text_repair.repair_mind(mind.id)
    assert repair_text.main([mind.id]) == 0  # the operator's command
    second = text_repair.repair_mind(mind.id)
    # Then it rewrote the memory, its revision, the tag's copy and counter; a second run has nothing to do
    assert first >= 4 and second == 0, (first, second)
    raw = dynamo.query(
        TableName=MEMORIES,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": mind.id}},
    )["Items"]
    as_stored = [{k: TypeDeserializer().deserialize(v) for k, v in item.items()} for item in raw]
    assert [json_input.lone_surrogate(item) for item in as_stored] == [None] * len(raw)
    # And a later change of the memory leaves no copy or count of the old tag behind
    ok(api.store(mind, category="note", key="home", content="Lives in Hamburg", tags=["city"]))
    items = mind_items(dynamo, mind.id)
    assert [t["sk"].split("#")[1] for t in items["tag"]] == ["04:city"]
    counters = {i["sk"]: i.get("n") for i in scan(dynamo, MEMORIES) if i["sk"].startswith("NTAG#")}
    assert counters == {"NTAG#01:\ufffd#note": 0, "NTAG#04:city#note": 1}
