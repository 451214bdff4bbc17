"""Every list is paginated the same way, and every cursor is checked: a cursor signed with the
pepper whose payload has the wrong shape is a 400, never a 500 (issue 10)."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.memory.selections import ListFilters, TagQuery
from synapse.search import service
from synapse.search.filters import SearchFilters
from synapse.storage import cursor

from tests.support.api import Api, MindHandle, jwt_for, memory_body
from tests.support.checks import as_user, assert_error
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
USER = "pager"


def signed(payload: bytes) -> str:
    """A cursor over any bytes, signed as the service signs: it passes the signature check."""
    signature = hmac.new(cursor._signing_key(), payload, hashlib.sha256).digest()
    return cursor._b64(payload) + "." + cursor._b64(signature)


@dataclass(frozen=True)
class Listing:
    """One list endpoint and what its cursors are bound to and hold."""

    name: str
    path: str  # {mind} is the mind's id
    query: dict[str, str]
    scope: str
    fields: tuple[str, ...]
    by_user: bool = False  # bound to the user (GET /minds), not to a mind

    def bound(self, mind: MindHandle) -> str:
        return f"user:{USER}" if self.by_user else mind.id


LISTINGS = [
    Listing("memory", "/memory", {}, ListFilters().scope(), ("pk", "sk", "created_sk")),
    Listing("by-tag", "/memory/by-tag", {"tag": "docker"}, TagQuery("docker").scope(), ("pk", "sk")),
    Listing(
        "expiring",
        "/memory/expiring",
        {},
        f"expiring {int(timedelta(days=7).total_seconds())}s",
        ("pk", "sk", "expires_at"),
    ),
    Listing("search", "/memory/search", {"q": "berlin"}, service._scope("berlin", SearchFilters()), ("o",)),
    Listing("minds", "/minds", {}, "minds", ("id", "created_at"), by_user=True),
    Listing("keys", "/minds/{mind}/keys", {}, "list KEY#", ("sk",)),
    Listing("hooks", "/minds/{mind}/hooks", {}, "list HOOK#", ("sk",)),
    Listing("webhooks", "/minds/{mind}/webhooks", {}, "list WEBHOOK#", ("sk",)),
]


def _payload(listing: Listing, mind: MindHandle, position: Any) -> bytes:
    return json.dumps({"m": listing.bound(mind), "s": listing.scope, "p": position}).encode()


MALFORMED: dict[str, Any] = {
    "not json": lambda listing, mind: b"\xff\xfe not json",
    "a list": lambda listing, mind: b"[1, 2]",
    "no position": lambda listing, mind: json.dumps({"m": listing.bound(mind), "s": listing.scope}).encode(),
    "a string position": lambda listing, mind: _payload(listing, mind, "MEM#fact#x"),
    "an empty position": lambda listing, mind: _payload(listing, mind, {}),
    "other fields": lambda listing, mind: _payload(listing, mind, {"zz": "a"}),
    "lists for strings": lambda listing, mind: _payload(listing, mind, {f: [1] for f in listing.fields}),
    "booleans": lambda listing, mind: _payload(listing, mind, {f: True for f in listing.fields}),
    "objects": lambda listing, mind: _payload(listing, mind, {f: {"S": "x"} for f in listing.fields}),
    "nulls": lambda listing, mind: _payload(listing, mind, {f: None for f in listing.fields}),
    "a huge value": lambda listing, mind: _payload(listing, mind, {f: "x" * 5000 for f in listing.fields}),
    "another mind or place": lambda listing, mind: _payload(
        listing, mind, {f: "m_someoneelse" if f in {"pk", "id"} else "MEM#x" for f in listing.fields}
    ),
    "a negative offset": lambda listing, mind: _payload(listing, mind, {f: -1 for f in listing.fields}),
}


@pytest.fixture
def mind(api: Api, configure: Configure) -> MindHandle:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    return api.create_mind(user=USER)


@pytest.mark.parametrize("malformed", sorted(MALFORMED))
@pytest.mark.parametrize("listing", LISTINGS, ids=lambda listing: listing.name)
def test_a_signed_cursor_of_the_wrong_shape_is_a_400(
    api: Api, mind: MindHandle, listing: Listing, malformed: str
) -> None:
    # Given a cursor bound to this list and signed with the pepper, whose payload is malformed
    token = signed(MALFORMED[malformed](listing, mind))
    # When the list is asked for the page after it
    query = {**listing.query, "cursor": token}
    answer = api.call("GET", listing.path.format(mind=mind.id), query=query, **as_user(mind))
    # Then it is a 400 naming the cursor, in the error envelope
    assert_error(answer, 400, field="cursor")


# ---------------------------------------------------------------- pages


def _pages(api: Api, mind: MindHandle, path: str, name: str, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    query: dict[str, Any] = {"limit": limit}
    while True:
        answer = api.call("GET", path, query=query, **as_user(mind))
        assert answer.status == 200, answer.text
        body = answer.json()
        pages.append([item["id"] for item in body[name]])
        if body["next_cursor"] is None:
            return pages
        query["cursor"] = body["next_cursor"]


def _make(api: Api, mind: MindHandle, kind: str, i: int) -> None:
    bodies = {
        "keys": {"label": f"k{i}"},
        "hooks": {"label": f"h{i}"},
        "webhooks": {"url": f"http://127.0.0.1:9/{i}", "events": ["memory.created"]},
    }
    if kind == "minds":
        api.create_mind(user=USER, name=f"mind {i}")
        return
    answer = api.call("POST", f"/minds/{mind.id}/{kind}", token=mind.jwt, json_body=bodies[kind])
    assert answer.status == 201, answer.text


@pytest.mark.parametrize("kind", ["minds", "keys", "hooks", "webhooks"])
def test_a_list_comes_in_pages_of_limit_until_next_cursor_is_null(
    api: Api, mind: MindHandle, kind: str
) -> None:
    # Given 5 of a kind (the mind and its first key count as one)
    for i in range(5 if kind in {"hooks", "webhooks"} else 4):
        _make(api, mind, kind, i)
    path = "/minds" if kind == "minds" else f"/minds/{mind.id}/{kind}"
    # When they are listed 2 at a time, following next_cursor
    pages = _pages(api, mind, path, kind, 2)
    # Then there are pages of 2, 2 and 1, each item once, the same as one page of all
    assert [len(p) for p in pages] == [2, 2, 1]
    every = [i for p in pages for i in p]
    assert every == _pages(api, mind, path, kind, 100)[0] and len(set(every)) == 5


@pytest.mark.parametrize(
    "path", ["/minds", "/minds/{mind}/keys", "/minds/{mind}/hooks", "/minds/{mind}/webhooks"]
)
@pytest.mark.parametrize("limit", ["0", "101", "-1", "ten", "²"])
def test_a_limit_outside_1_to_100_is_a_400(api: Api, mind: MindHandle, path: str, limit: str) -> None:
    answer = api.call("GET", path.format(mind=mind.id), query={"limit": limit}, token=mind.jwt)
    assert_error(answer, 400, field="limit")


def test_a_cursor_is_good_only_for_its_own_list_mind_and_user(api: Api, mind: MindHandle) -> None:
    # Given a cursor into a mind's keys, and the user's second mind
    for i in range(3):
        _make(api, mind, "keys", i)
    keys_cursor = api.call("GET", f"/minds/{mind.id}/keys", query={"limit": 1}, token=mind.jwt).json()[
        "next_cursor"
    ]
    other = api.create_mind(user=USER, name="second")
    minds_cursor = api.call("GET", "/minds", query={"limit": 1}, token=mind.jwt).json()["next_cursor"]
    # When each is presented elsewhere: another list, another mind, another user
    elsewhere = [
        api.call("GET", f"/minds/{mind.id}/hooks", query={"cursor": keys_cursor}, token=mind.jwt),
        api.call("GET", f"/minds/{other.id}/keys", query={"cursor": keys_cursor}, token=mind.jwt),
        api.call("GET", "/minds", query={"cursor": minds_cursor}, token=jwt_for("someone-else")),
        api.call("GET", "/memory", query={"cursor": keys_cursor}, **as_user(mind)),
    ]
    # Then every one is a 400, never another list's data
    for answer in elsewhere:
        assert_error(answer, 400, field="cursor")


def test_the_memory_list_still_pages_with_its_own_cursors(api: Api, mind: MindHandle) -> None:
    # Given 3 memories (the memory lists' cursors are now checked for shape too)
    for i in range(3):
        assert api.store(mind, **memory_body(key=f"fact_{i}")).status == 201
    # When they are listed one at a time
    pages = _pages(api, mind, "/memory", "memories", 1)
    # Then every memory comes once
    assert [len(p) for p in pages] == [1, 1, 1]


# ---------------------------------------------------------------- signed cursors with absurd values
# A cursor the service issued, its position rewritten and signed again with the pepper: it passes the
# signature, the mind and the query, and has the fields its list needs, only their values are
# absurd (issue 21). Each must be the cursor's 400, never a 200 over a made-up key or a 500.

STRETCHED = 1_500  # characters: past DynamoDB's 1,024 bytes for a sort key, under 2,048 for a partition key


def _filled(api: Api, mind: MindHandle) -> dict[str, str]:
    """Two or more of everything a list shows, so each list's first page of one has a next_cursor;
    the paths of the lists, by name."""
    soon = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    for key in ("home_city", "work_city"):
        body = memory_body(key=key, tags=["docker"], expires_at=soon)
        assert api.store(mind, **body).status == 201
        proposed = api.store(mind, as_agent=True, **{**body, "content": "Lives in Hamburg"})
        assert proposed.status == 202, proposed.text  # an agent's change to a person's memory
    memory_id = api.call("GET", "/memory", **as_user(mind)).json()["memories"][0]["id"]
    changed = api.call("PUT", f"/memory/{memory_id}", json_body={"content": "Moved"}, **as_user(mind))
    assert changed.status == 200, changed.text  # a second revision
    for i in range(2):
        _make(api, mind, "keys", i)
        _make(api, mind, "hooks", i)
        _make(api, mind, "webhooks", i)
    api.create_mind(user=USER, name="second")
    return {
        "memory": "/memory",
        "by-tag": "/memory/by-tag?tag=docker",
        "expiring": "/memory/expiring?within=365d",
        "history": f"/memory/{memory_id}/history",
        "proposals": "/proposals",
        "minds": "/minds",
        "keys": f"/minds/{mind.id}/keys",
        "hooks": f"/minds/{mind.id}/hooks",
        "webhooks": f"/minds/{mind.id}/webhooks",
        "audit": f"/minds/{mind.id}/audit",
    }


def _get(api: Api, mind: MindHandle, path: str, **query: Any) -> Any:
    base, _, raw = path.partition("?")
    params = dict(part.split("=") for part in raw.split("&") if part)
    return api.call("GET", base, query={**params, **query}, **as_user(mind))


def _stretched(value: Any) -> Any:
    return value + "x" * (STRETCHED - len(value)) if isinstance(value, str) else value


ABSURD: dict[str, Any] = {
    # Every field but the partition key (which must name the cursor's own mind) made far too long
    "1,500-character keys": lambda p: {f: v if f == "pk" else _stretched(v) for f, v in p.items()},
    # 700 two-byte characters: 1,400 bytes, though fewer characters than any bound on characters
    "1,400-byte keys": lambda p: {f: v if f == "pk" else v + "é" * 700 for f, v in p.items()},
    "numbers for strings": lambda p: {f: v if f == "pk" else 12345 for f, v in p.items()},
    "a huge number": lambda p: {f: v if f == "pk" else 10**40 for f, v in p.items()},
    "a lone surrogate": lambda p: {f: v if f == "pk" else v + "\ud800" for f, v in p.items()},
    "empty strings": lambda p: {f: v if f == "pk" else "" for f, v in p.items()},
    "a 3,000-character partition key": lambda p: {**p, "pk": p.get("pk", "") + "x" * 3_000},
}
LISTS = ["memory", "by-tag", "expiring", "history", "proposals", "minds", "keys", "hooks", "webhooks"]
LISTS += ["audit"]


@pytest.mark.parametrize("listing", LISTS)
def test_a_signed_cursor_with_absurd_values_is_a_400(api: Api, mind: MindHandle, listing: str) -> None:
    # Given a page of one item of each list, and the cursor to its next page
    path = _filled(api, mind)[listing]
    first = _get(api, mind, path, limit=1)
    assert first.status == 200, first.text
    token = first.json()["next_cursor"]
    assert token
    body = token.split(".")[0]
    payload = json.loads(cursor._unb64(body))
    # When its position is rewritten each absurd way and signed again with the pepper
    for name, rewrite in ABSURD.items():
        if name == "a 3,000-character partition key" and "pk" not in payload["p"]:
            continue
        forged = signed(json.dumps({**payload, "p": rewrite(payload["p"])}).encode())
        answer = _get(api, mind, path, limit=1, cursor=forged)
        # Then it is the cursor's 400
        assert answer.status == 400, (name, answer.status, answer.text[:300])
        assert_error(answer, 400, field="cursor")
    # And the cursor as issued still works
    assert _get(api, mind, path, limit=1, cursor=token).status == 200
