"""Builders for the tests of a write's expiry (issue 34 item 5): moments relative to the service's
clock, a memory expired honestly (stored with a future expiry, then the clock moved past it), and the
write doors besides REST's own — a signed hook delivery and an MCP tool call."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.memory import expiry, sweep
from synapse.storage import tables
from synapse.webhooks import signing

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, ok
from tests.support.clock import MovableClock


def ago(**delta: float) -> str:
    """The moment `delta` before the service's now, as the API writes it."""
    return clock.to_iso(clock.now() - timedelta(**delta))


def ahead(**delta: float) -> str:
    """The moment `delta` after the service's now."""
    return clock.to_iso(clock.now() + timedelta(**delta))


def expired_memory(api: Api, mind: MindHandle, moving: MovableClock, **fields: Any) -> dict[str, Any]:
    """A memory whose expiry has passed, as the API shows it: stored (by the mind's person) expiring
    in an hour, then the clock moved a day on. A write may not set a past expiry; time may pass one."""
    stored = ok(api.store(mind, expires_at=ahead(hours=1), **fields), 201)
    moving.advance(days=1)
    shown = ok(api.call("GET", f"/memory/{stored['id']}", **as_user(mind)))
    assert shown["expired"] is True, shown
    return shown


def swept_before(moment: datetime) -> None:
    """Every shard's watermark at the hour before `moment`, as a sweep run then leaves them: the
    next run reads from there, not the day back a shard never swept starts from (33 shards x 25
    empty hours: ~825 queries, seconds in moto). The tests of that first run start without them."""
    hour = expiry.bucket_of(moment - expiry.BUCKET_WIDTH)
    for shard in sweep.ALL_SHARDS:
        item = {**sweep.state_key(shard), "from": hour}
        tables.client().put_item(TableName=tables.memories_table(), Item=tables.dump(item))


@dataclass
class Hook:
    id: str
    secret: str


def new_hook(api: Api, mind: MindHandle) -> Hook:
    made = ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}), 201)
    return Hook(made["id"], made["secret"])


def deliver(api: Api, hook: Hook, body: dict[str, Any]) -> HttpResponse:
    """POST /hooks/{id} signed as a platform would, at the service's clock (which checks the stamp)."""
    payload = json.dumps(body).encode()
    signature = signing.header_value([hook.secret], payload, int(clock.now().timestamp()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    return api.call("POST", f"/hooks/{hook.id}", raw_body=payload, headers=headers)


def mcp_tool(api: Api, token: str, name: str, **arguments: Any) -> tuple[bool, str]:
    """A `tools/call` on /mcp: whether the result is a tool error, and the text the model reads."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    answer = api.call("POST", "/mcp", token=token, raw_body=json.dumps(message).encode(), headers=headers)
    result = ok(answer)["result"]
    return bool(result["isError"]), str(result["content"][0]["text"])
