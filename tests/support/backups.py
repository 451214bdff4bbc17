"""Builders for the backup and restore tests: a mind holding every kind of state, a backup taken
page by page, a restore sent chunk by chunk, and a mind's partition as comparable items."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import httpx
from synapse.core import clock
from synapse.memory.events import EVENT_PREFIX

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, ok
from tests.support.tables import MEMORIES, scan

NDJSON = {"content-type": "application/x-ndjson"}
PREV = re.compile(rb'"prev":"[0-9a-f]{64}"')


def rich_mind(api: Api, user: str = "user-1") -> tuple[MindHandle, dict[str, str]]:
    """A mind with verified and unverified, agent and user, expired, much-revised, deleted and
    tagged memories, pending, accepted and rejected proposals, a second key, a hook and
    non-default settings; returns it and the ids of its notable memories."""
    mind = api.create_mind(user)
    ok(
        api.call(
            "PATCH",
            f"/minds/{mind.id}",
            token=mind.jwt,
            json_body={"history_retention_days": 45, "agent_writes_critical": "propose"},
        )
    )
    ids: dict[str, str] = {}
    ids["user"] = ok(api.store(mind, key="home_city", tags=["Home", "city"], occurred_at="2026-11-02"), 201)[
        "id"
    ]
    ids["agent"] = ok(
        api.store(
            mind,
            as_agent=True,
            key="coffee",
            content="Drinks flat whites",
            occurred_at="2026-11-03T08:00:00Z",
        ),
        201,
    )["id"]
    ids["vouched"] = ok(
        api.store(mind, as_agent=True, key="tea", content="Likes green tea", tags=["drinks"]), 201
    )["id"]
    ok(api.call("POST", f"/memory/{ids['vouched']}/verify", **as_user(mind)))
    ids["expired"] = ok(
        api.store(mind, as_agent=True, key="old_trip", content="In Rome", expires_at=expire_now()),
        201,
    )["id"]
    ids["revised"] = ok(
        api.store(mind, category="project", key="synapse", content="v1", priority="low"), 201
    )["id"]
    for version in range(2, 8):
        ok(
            api.call(
                "PUT", f"/memory/{ids['revised']}", json_body={"content": f"v{version}"}, **as_user(mind)
            )
        )
    ids["deleted"] = ok(api.store(mind, key="old_job", content="Worked at Acme", tags=["work"]), 201)["id"]
    ok(
        api.call(
            "PUT", f"/memory/{ids['deleted']}", json_body={"content": "Worked at Acme, then"}, **as_user(mind)
        )
    )
    assert api.call("DELETE", f"/memory/{ids['deleted']}", **as_user(mind)).status == 204
    _proposals(api, mind, ids)
    ok(
        api.call(
            "POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci", "scopes": ["read"]}
        ),
        201,
    )
    ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={"label": "zapier"}), 201)
    return mind, ids


def expire_now() -> str:
    """An expiry of now: the memory is expired at once (a past one is refused, issue 34 item 5)."""
    return clock.to_iso(clock.now())


def _proposals(api: Api, mind: MindHandle, ids: dict[str, str]) -> None:
    """Agents' changes to verified memories: one accepted, one rejected, one left pending."""
    for key, content in (
        ("home_city", "Lives in Paris"),
        ("tea", "Likes black tea"),
        ("home_city", "Lives in Oslo"),
    ):
        answer = api.store(mind, as_agent=True, key=key, content=content)
        assert answer.status == 202, answer.text
    pending = ok(api.call("GET", "/proposals", query={"status": "pending"}, **as_user(mind)))["proposals"]
    tea = next(p for p in pending if p["key"] == "tea")
    ok(api.call("POST", f"/proposals/{tea['id']}/reject", **as_user(mind)))
    ids["to_accept"] = ok(api.store(mind, as_agent=True, key="tea", content="Likes oolong"), 202)["proposal"][
        "id"
    ]
    ok(api.call("POST", f"/proposals/{ids['to_accept']}/accept", **as_user(mind)))
    assert (
        api.store(mind, as_agent=True, key="coffee", content="Drinks espresso", priority="critical").status
        < 300
    )


def backup(api: Api, mind: MindHandle, limit: int | None = None) -> bytes:
    """The whole backup, page after page."""
    data, cursor = b"", None
    while True:
        query = {k: v for k, v in (("cursor", cursor), ("limit", limit)) if v is not None}
        answer = api.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt, query=query)
        assert answer.status == 200, answer.text
        assert answer.headers["Content-Type"].startswith("application/x-ndjson")
        data += answer.body
        cursor = answer.headers.get("X-Next-Cursor")
        if cursor is None:
            return data


def send(api: Api, mind: MindHandle, lines: list[bytes], last: bool = False) -> HttpResponse:
    body = b"".join(line + b"\n" for line in lines)
    query = {"last": "true"} if last else {}
    return api.call(
        "POST", f"/minds/{mind.id}/restore", token=mind.jwt, raw_body=body, headers=NDJSON, query=query
    )


def restore(api: Api, mind: MindHandle, data: bytes, chunk: int = 50) -> dict[str, Any]:
    """Send the backup in chunks of `chunk` lines, each from the line the last answer asked for."""
    lines = data.splitlines()
    next_line = 1
    while True:
        part = lines[next_line - 1 : next_line - 1 + chunk]
        answer = ok(send(api, mind, part, last=next_line - 1 + chunk >= len(lines)))
        if answer["status"] == "done":
            return answer
        assert answer["next_line"] > next_line or len(part) < 2, answer
        next_line = answer["next_line"]


def rechained(lines: list[bytes]) -> list[bytes]:
    """The lines with their `prev` computed again: a stream edited by someone who knows the format
    (but not the deployment's key: each `sig` stays as it was, and no longer verifies)."""
    digest, out = b"", []
    for line in lines:  # the `prev` replaced in the bytes: a line's other text stays as written
        chained = PREV.sub(b'"prev":"' + digest.hex().encode() + b'"', line, count=1)
        digest = hashlib.sha256(digest + chained).digest()
        out.append(chained)
    return out


def edited(lines: list[bytes], at: int, change: Callable[[dict[str, Any]], Any], **raw: str) -> list[bytes]:
    """The backup with line `at` (an index) changed by `change` (on its record), then each `raw`
    placeholder string replaced by JSON text no encoder writes (`NaN`, `1e999`), chained again."""
    record = json.loads(lines[at])
    change(record)
    text = json.dumps(record, separators=(",", ":"))  # a lone surrogate as JSON writes it: escaped
    for placeholder, literal in raw.items():
        text = text.replace(json.dumps(placeholder), literal)
    return rechained([*lines[:at], text.encode(), *lines[at + 1 :]])


def rebuilt(records: list[dict[str, Any]]) -> list[bytes]:
    """Lines for `records` as someone who knows the format (not the deployment's key) writes them:
    numbered in order, the trailer counting what came, each `prev` computed, no `sig` or `seal`."""
    digest, out, counts = b"", [], dict[str, int]()
    for n, record in enumerate(records, start=1):
        record = {k: v for k, v in record.items() if k not in {"sig", "seal", "prev"}}
        record["n"] = n
        if record["kind"] == "end":
            record.update(lines=n - 1, counts=counts)
        elif record["kind"] != "header":
            counts[record["kind"]] = counts.get(record["kind"], 0) + 1
        if n > 1:
            record = {"n": n, "kind": record["kind"], "prev": digest.hex(), **record}
        out.append(json.dumps(record, separators=(",", ":")).encode())
        digest = hashlib.sha256(digest + out[-1]).digest()
    return out


def line_of(lines: list[bytes], kind: str, **memory: Any) -> int:
    """The index of the first line of `kind` whose memory has the given fields (any, if none)."""
    for index, line in enumerate(lines):
        record = json.loads(line)
        held = record.get("memory") or {}
        if record["kind"] == kind and all(held.get(k) == v for k, v in memory.items()):
            return index
    raise AssertionError(f"no {kind} line with {memory}")


def partition(dynamo: Any, mind_id: str, *, as_mind: str | None = None) -> dict[str, dict[str, Any]]:
    """The mind's Memories-table items by sort key, as comparable values (its id written as
    `as_mind`'s, to compare a source with its restored copy), without what a restore may change
    (docs/backup.md): the transaction token, the expiry sweep's bucket, the head (which holds the
    mind's own name), the restore job, event items (the stream's, gone in a day) and counters at
    zero (which count nothing, as absent ones)."""

    def same(value: Any) -> Any:
        if isinstance(value, str) and as_mind:
            return value.replace(mind_id, as_mind)
        if isinstance(value, dict):
            return {k: same(v) for k, v in value.items() if k not in {"txn", "expiry_bucket"}}
        if isinstance(value, list):
            return [same(v) for v in value]
        return value

    return {
        str(item["sk"]): same(item)
        for item in scan(dynamo, MEMORIES)
        if item["pk"] == mind_id
        and item["sk"] not in {"NCAT", "RESTORE"}
        and not str(item["sk"]).startswith(EVENT_PREFIX)
        and not _zero_counter(item)
    }


def _zero_counter(item: dict[str, Any]) -> bool:
    counter = str(item["sk"]).startswith(("NCAT#", "NTAG#"))
    return counter and not any(item.get(name) for name in ("n", "v", "low"))


def listed(api: Api, mind: MindHandle, path: str, name: str, **query: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ok(
            api.call("GET", path, query={**query, **({"cursor": cursor} if cursor else {})}, **as_user(mind))
        )
        found += page[name]
        cursor = page["next_cursor"]
        if not cursor:
            return found


def seen(api: Api, mind: MindHandle, ids: dict[str, str]) -> dict[str, Any]:
    """What the API shows of a mind: memories, each memory's history (a deleted one's too),
    proposals of every status, settings and counts; without the mind's id."""
    memories = listed(api, mind, "/memory", "memories", include_expired="true", limit=100)
    histories = {
        memory_id: listed(api, mind, f"/memory/{memory_id}/history", "revisions", limit=100)
        for memory_id in sorted({m["id"] for m in memories} | {ids["deleted"]})
    }
    shown = ok(api.call("GET", f"/minds/{mind.id}", token=mind.jwt))
    everything = {
        "memories": memories,
        "histories": histories,
        "proposals": listed(api, mind, "/proposals", "proposals", limit=100),
        "settings": shown["settings"],
        "memory_count": shown["memory_count"],
        "recall": api.call("GET", "/memory/recall", **as_user(mind)).text.split("\n", 1)[1],
        "by_tag": listed(api, mind, "/memory/by-tag", "memories", tag="drinks"),
    }
    return json.loads(json.dumps(everything).replace(mind.id, "<mind>"))


class HttpApi(Api):
    """`Api` over HTTP, against a running service (`make run`'s stack): every mind is its JWT's."""

    def __init__(self, url: str, jwt: str) -> None:
        self.http, self.jwt = httpx.Client(base_url=url, timeout=60), jwt

    def call(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json_body: Any = None,
        raw_body: bytes | None = None,
        headers: dict[str, str] | None = None,
        query: dict[str, Any] | list[tuple[str, Any]] | None = None,
    ) -> HttpResponse:
        sent = {**(headers or {}), **({"authorization": f"Bearer {token}"} if token else {})}
        answer = self.http.request(method, path, json=json_body, content=raw_body, headers=sent, params=query)
        return HttpResponse(
            answer.status_code, {k.title(): v for k, v in answer.headers.items()}, answer.content
        )

    def create_mind(self, user: str = "user-1", name: str = "Michael's Mind") -> MindHandle:
        answer = self.call("POST", "/minds", token=self.jwt, json_body={"name": name})
        assert answer.status == 201, answer.text
        data = answer.json()
        return MindHandle(data["mind"]["id"], self.jwt, data["mind_key"]["key"], data["mind_key"]["id"])
