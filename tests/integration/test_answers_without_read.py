"""A credential without `read` learns nothing of what memories say from any answer (issue 40 item 1).

Write-only and delete-only credentials at every door — REST, batch, hooks, MCP with a Mind Key, MCP
with an OAuth grant — get ids, keys, versions and status, never `content`, `tags` or `similar`
(`synapse.auth.visibility`, docs/auth.md#what-answers-show). Each test also shows a reader's answer
holds what the other's leaves out, so it fails if the rule stops being applied.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from synapse.auth import visibility
from synapse.memory.kinds import Memory
from synapse.webhooks import signing

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, ok
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.oauth import Flow, mcp
from tests.support.settings import configure_fixture as configure_fixture

SECRET = "My bank card PIN number is 4821"
SECRET_WORD = "4821"
PROBE = {"category": "fact", "key": "probe_bank_pin", "content": SECRET, "tags": ["probe"]}


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


@pytest.fixture
def pin(api: Api, mind: MindHandle, pump: Pump) -> dict[str, Any]:
    """A person's memory (so verified), tagged, in the mind's index."""
    body = {"category": "fact", "key": "bank_pin", "content": SECRET, "tags": ["bank", "app:private"]}
    stored = ok(api.call("POST", "/memory", json_body=body, **as_user(mind)), 201)
    pump.run_once()
    return stored


def key_with(api: Api, mind: MindHandle, *scopes: str) -> str:
    made = ok(
        api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"scopes": list(scopes)}), 201
    )
    return str(made["key"])


def assert_says_nothing(answer: Any) -> None:
    """No field that carries a memory's text, at any depth, and not a word of the secret anywhere."""
    text = json.dumps(answer)
    assert SECRET_WORD not in text, text
    found = [name for name in visibility.WITHHELD if f'"{name}":' in text]
    assert not found, (found, text)


def assert_shows_the_memory(memory: dict[str, Any], pin: dict[str, Any]) -> None:
    """What a caller without `read` still learns: which memory, at which version, in which state."""
    assert memory["id"] == pin["id"] and memory["key"] == "bank_pin" and memory["version"] == pin["version"]
    assert memory["verified"] is True and memory["category"] == "fact" and "updated_at" in memory


# ---------------------------------------------------------------- REST


def test_a_write_only_keys_write_near_a_memory_gets_no_similar(
    api: Api, mind: MindHandle, pin: dict[str, Any]
) -> None:
    # Given a key that may only write, and one that may read too
    writer, reader = key_with(api, mind, "write"), key_with(api, mind, "read", "write")
    # When each stores what the mind already holds, under a new key (the probe)
    written = api.call("POST", "/memory", token=writer, json_body=PROBE)
    control = ok(api.call("POST", "/memory", token=reader, json_body={**PROBE, "key": "control_pin"}), 201)
    # Then the reader is told which memory it repeats, and the writer only what it stored
    assert [s["id"] for s in control["similar"]] == [pin["id"]] and control["content"] == SECRET
    body = ok(written, 201)
    assert_says_nothing(body)
    assert body["key"] == "probe_bank_pin" and body["version"] == 1 and body["id"].startswith("mem_")
    assert written.headers["Location"] == f"/memory/{body['id']}"
    # And storing it again under its own key (a replace, 200) says no more
    again = ok(api.call("POST", "/memory", token=writer, json_body={**PROBE, "priority": "high"}))
    assert_says_nothing(again)
    assert again["id"] == body["id"] and again["version"] == 2 and again["priority"] == "high"


def test_a_write_only_keys_update_answers_the_version_not_the_content(
    api: Api, mind: MindHandle, pin: dict[str, Any]
) -> None:
    # Given an agent's (unverified) memory, and a write-only key
    mine = ok(api.call("POST", "/memory", token=mind.key, json_body={**PROBE, "key": "agent_pin"}), 201)
    writer = key_with(api, mind, "write")
    # When the write-only key raises its priority, and that of the person's verified memory
    updated = api.call("PUT", f"/memory/{mine['id']}", token=writer, json_body={"priority": "critical"})
    raised = api.call("PUT", f"/memory/{pin['id']}", token=writer, json_body={"priority": "critical"})
    # Then both apply, and neither answer holds what the memory says
    body = ok(updated)
    assert_says_nothing(body)
    assert body["version"] == 2 and body["priority"] == "critical"
    assert_says_nothing(ok(raised))
    # And the owner still reads the content (nothing was lost)
    assert ok(api.call("GET", f"/memory/{pin['id']}", **as_user(mind)))["content"] == SECRET


def test_a_write_only_keys_proposals_hold_no_content(api: Api, mind: MindHandle, pin: dict[str, Any]) -> None:
    writer = key_with(api, mind, "write")
    # When it stores over the person's verified memory by its key, and PUTs new content into it
    by_key = api.call("POST", "/memory", token=writer, json_body={**PROBE, "key": "bank_pin", "content": "x"})
    by_id = api.call("PUT", f"/memory/{pin['id']}", token=writer, json_body={"content": "PIN changed"})
    # Then both are proposals (202), answered with the proposal's id and status and the memory's state
    for answer in (by_key, by_id):
        body = ok(answer, 202)
        assert_says_nothing(body)
        assert body["proposal"]["status"] == "pending" and body["proposal"]["memory_id"] == pin["id"]
        assert set(body["proposal"]["proposed"]) == {"priority", "confidence", "expires_at", "occurred_at"}
        assert_shows_the_memory(body["memory"], pin)
        assert body["memory"]["pending_proposal"] == body["proposal"]["id"]


def test_a_delete_only_keys_delete_of_a_verified_memory_is_a_proposal_without_content(
    api: Api, mind: MindHandle, pin: dict[str, Any]
) -> None:
    # Given a key that may only delete, and one that may read too
    deleter, reader = key_with(api, mind, "delete"), key_with(api, mind, "read", "delete")
    # When the reader deletes the person's verified memory, then the delete-only key does
    control = ok(api.call("DELETE", f"/memory/{pin['id']}", token=reader), 202)
    answer = api.call("DELETE", f"/memory/{pin['id']}", token=deleter)
    # Then the reader's proposal shows the memory, the delete-only key's only which one it is
    assert control["memory"]["content"] == SECRET and control["proposal"]["proposed"]["content"] == SECRET
    body = ok(answer, 202)
    assert_says_nothing(body)
    assert body["proposal"]["action"] == "delete" and body["proposal"]["status"] == "pending"
    assert_shows_the_memory(body["memory"], pin)


# ---------------------------------------------------------------- batch and hooks


def test_a_write_only_keys_batch_gets_no_similar_nor_proposed_content(
    api: Api, mind: MindHandle, pin: dict[str, Any]
) -> None:
    writer, reader = key_with(api, mind, "write"), key_with(api, mind, "read", "write")
    memories = [PROBE, {**PROBE, "key": "bank_pin", "content": "PIN is 0000"}]
    # When the reader stores a batch with an Idempotency-Key, and the write-only key replays it
    sent = {"Idempotency-Key": "batch-1"}
    first = ok(
        api.call("POST", "/memory/batch", token=reader, json_body={"memories": memories}, headers=sent)
    )
    replay = api.call("POST", "/memory/batch", token=writer, json_body={"memories": memories}, headers=sent)
    # And the write-only key sends it afresh
    fresh = api.call("POST", "/memory/batch", token=writer, json_body={"memories": memories})
    # Then the reader saw the repeat and the proposed content; the write-only key sees neither
    assert [s["id"] for s in first["results"][0]["similar"]] == [pin["id"]]
    assert first["results"][1]["proposal"]["proposed"]["content"] == "PIN is 0000"
    assert replay.headers.get("Idempotent-Replayed") == "true"
    for answer, status in ((replay, "created"), (fresh, "replaced")):
        body = ok(answer)
        assert_says_nothing(body)
        assert [r["status"] for r in body["results"]] == [status, "proposed"]
        assert body["results"][1]["memory"]["id"] == pin["id"]


def test_a_hooks_delivery_gets_no_similar_nor_proposed_content(
    api: Api, mind: MindHandle, pin: dict[str, Any]
) -> None:
    # Given an inbound hook (it may only write)
    hook = ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}), 201)
    # When it delivers a near repeat of the person's memory and a rewrite of it
    payload = json.dumps(
        {"memories": [PROBE, {**PROBE, "key": "bank_pin", "content": "PIN is 0000"}]}
    ).encode()
    signature = signing.header_value([hook["secret"]], payload, int(time.time()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    answer = api.call("POST", f"/hooks/{hook['id']}", raw_body=payload, headers=headers)
    # Then it learns what it stored and that the rewrite waits for review, nothing of the memory
    body = ok(answer)
    assert_says_nothing(body)
    assert [r["status"] for r in body["results"]] == ["created", "proposed"]
    assert body["results"][1]["proposal"]["proposed_by"] == {"source": "agent", "hook_id": hook["id"]}


# ---------------------------------------------------------------- MCP


def tool(api: Api, token: str, name: str, **arguments: Any) -> Any:
    answer: HttpResponse = mcp(api, token, "tools/call", {"name": name, "arguments": arguments})
    assert answer.status == 200, answer.text
    result = answer.json()["result"]
    assert not result["isError"], result
    return json.loads(result["content"][0]["text"])


def grant_token(api: Api, mind: MindHandle, *scopes: str) -> str:
    return str(Flow(api).tokens(mind, scopes=list(scopes))["access_token"])


@pytest.mark.parametrize("credential", ["mind key", "oauth grant"])
def test_mcp_write_tools_answer_no_content_without_read(
    api: Api, mind: MindHandle, pin: dict[str, Any], credential: str
) -> None:
    # Given a write-only credential of either kind, and a full one
    writer = key_with(api, mind, "write") if credential == "mind key" else grant_token(api, mind, "write")
    reader = key_with(api, mind, "read", "write")
    # When the full one remembers the secret again, then the write-only one does
    control = tool(api, reader, "remember", content=SECRET)
    remembered = tool(api, writer, "remember", content=SECRET + ".", key="probe")
    # Then only the full one is told of the repeat and sees the content
    assert [s["id"] for s in control["similar"]] == [pin["id"]] and control["content"] == SECRET
    assert_says_nothing(remembered)
    assert "note" not in remembered and remembered["id"].startswith("mem_")
    # And an update of the person's memory (a proposal) and a batch say nothing of it either
    updated = tool(api, writer, "update", id=pin["id"], content="PIN changed")
    assert_says_nothing(updated)
    assert updated["pending_proposal"] and updated["note"].startswith("A person verified this memory")
    many = tool(api, writer, "remember_many", memories=[{"content": SECRET + "!", "key": "probe_too"}])
    assert_says_nothing(many)
    assert "note_similar" not in many and many["results"][0]["status"] == "created"


@pytest.mark.parametrize("credential", ["mind key", "oauth grant"])
def test_mcp_forget_of_a_verified_memory_answers_no_content_without_read(
    api: Api, mind: MindHandle, pin: dict[str, Any], credential: str
) -> None:
    # Given a delete-only credential of either kind
    deleter = key_with(api, mind, "delete") if credential == "mind key" else grant_token(api, mind, "delete")
    # When it forgets the person's verified memory, by id and by category and key
    by_id = tool(api, deleter, "forget", id=pin["id"])
    by_key = tool(api, deleter, "forget", category="fact", key="bank_pin")
    # Then each is a proposal naming the memory, without what it says
    for answer in (by_id, by_key):
        assert_says_nothing(answer)
        assert answer["proposal"]["action"] == "delete" and answer["memory"]["id"] == pin["id"]


# ---------------------------------------------------------------- the rule


def test_every_field_of_a_memory_is_decided_shown_or_withheld() -> None:
    # A new field of the stored memory must be decided in auth.visibility before it ships
    fields = {*Memory._fields, "expired"}
    assert fields == visibility.SHOWN_MEMORY_FIELDS | {"content", "tags"}, (
        "decide in synapse.auth.visibility whether a caller without `read` may see the new field"
    )
    assert not visibility.SHOWN_MEMORY_FIELDS & visibility.WITHHELD
