"""Recall, by-tag and expiring stay consistent with every write path of the core API.

After each write (create, replace by key, PUT update, verify, delete, mind deletion) the three
reads are compared with an oracle built from `GET /memory?include_expired=true` — a different
index — and the mind's raw items are checked: one tag copy per (memory, tag) and counters equal
to the memories they count, nothing left behind.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from synapse.core import clock
from synapse.storage import tables

from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user
from tests.support.clock import START
from tests.support.clock import ticking_clock_fixture as ticking_clock_fixture

RANK = {"critical": 0, "high": 1, "normal": 2, "low": 3}
SOON = clock.to_iso(START + timedelta(days=2))
LATER = clock.to_iso(START + timedelta(days=3))


def _pages(api: Api, mind: MindHandle, path: str, **query: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = api.call(
            "GET", path, query={**query, **({"cursor": cursor} if cursor else {})}, **as_agent(mind)
        )
        assert answer.status == 200, answer.text
        found += answer.json()["memories"]
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return found


def _raw_items(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :mind",
            ExpressionAttributeValues=tables.values(mind=mind_id),
        )
    )


def check(api: Api, mind: MindHandle) -> list[dict[str, Any]]:
    """Every read agrees with the oracle; returns the oracle's memories (expired included)."""
    stored = _pages(api, mind, "/memory", include_expired="true", limit=100)
    active = [m for m in stored if not m["expired"]]
    in_order = sorted(
        active,
        key=lambda m: (RANK[m["priority"]], -clock.epoch_micros(clock.from_iso(m["updated_at"])), m["id"]),
    )

    # recall: order, selection and header counts
    body = api.call("GET", "/memory/recall", query={"format": "json"}, **as_agent(mind)).json()
    assert [m["id"] for m in body["memories"]] == [m["id"] for m in in_order]
    assert [m["version"] for m in body["memories"]] == [m["version"] for m in in_order]
    assert (body["total"], body["verified"]) == (len(active), sum(m["verified"] for m in active))

    # by-tag, and tag-filtered recall with its counts, for every tag ever used here
    for tag in {"docker", "aws", "python", "rust"}:
        expected = [m["id"] for m in in_order if tag in m["tags"]]
        assert [m["id"] for m in _pages(api, mind, "/memory/by-tag", tag=tag, limit=1)] == expected, tag
        tagged = api.call(
            "GET", "/memory/recall", query={"format": "json", "tag": tag}, **as_agent(mind)
        ).json()
        assert [m["id"] for m in tagged["memories"]] == expected, tag
        assert tagged["total"] == len(expected), tag

    # expiring: the not-yet-expired with an expires_at, soonest first
    expiring = sorted((m for m in active if m["expires_at"]), key=lambda m: (m["expires_at"], m["id"]))
    got = _pages(api, mind, "/memory/expiring", within="365d", limit=1)
    # (memories expiring in the same millisecond may come in either order)
    assert [m["expires_at"] for m in got] == [m["expires_at"] for m in expiring]
    assert sorted(m["id"] for m in got) == sorted(m["id"] for m in expiring)

    # raw items: one tag copy per (memory, tag), holding the current version; counters match
    items = _raw_items(mind.id)
    copies = {
        (i["memory"]["id"], i["sk"].split("#")[1].split(":", 1)[1], i["memory"]["version"])
        for i in items
        if i["sk"].startswith("TAG#")
    }
    assert copies == {(m["id"], t, m["version"]) for m in stored for t in m["tags"]}
    counters = {
        i["sk"]: (int(i.get("n", 0)), int(i.get("v", 0)), int(i.get("low", 0)))
        for i in items
        if i["sk"].startswith(("NCAT#", "NTAG#"))
    }
    expected_counts: Counter[tuple[str, str]] = Counter()
    for m in stored:
        for sk in [f"NCAT#{m['category']}"] + [f"NTAG#{len(t):02d}:{t}#{m['category']}" for t in m["tags"]]:
            expected_counts[(sk, "n")] += 1
            expected_counts[(sk, "v")] += int(m["verified"])
            expected_counts[(sk, "low")] += int(m["priority"] == "low")
    assert {sk: c for sk, c in counters.items() if any(c)} == {
        sk: (expected_counts[(sk, "n")], expected_counts[(sk, "v")], expected_counts[(sk, "low")])
        for sk in {sk for sk, _ in expected_counts}
        if expected_counts[(sk, "n")]
    }
    return stored


def _store(api: Api, mind: MindHandle, *, as_agent: bool = False, **fields: Any) -> dict[str, Any]:
    answer = api.store(mind, as_agent=as_agent, **fields)
    assert answer.status in (200, 201), answer.text
    body: dict[str, Any] = answer.json()
    return body


def _seed(api: Api, mind: MindHandle) -> dict[str, dict[str, Any]]:
    return {
        "a": _store(api, mind, key="a", tags=["docker", "aws"], expires_at=SOON),
        "b": _store(api, mind, key="b", tags=["docker"], priority="high", as_agent=True),
        "c": _store(api, mind, category="project", key="c", tags=["aws"], priority="low", expires_at=LATER),
    }


def test_create_is_seen_by_every_read(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    check(api, mind)
    _seed(api, mind)
    stored = check(api, mind)
    assert len(stored) == 3


def _unverify(api: Api, mind: MindHandle) -> None:
    """Agents' changes to verified memories apply (and unverify them) instead of being proposed."""
    settings = {"agent_writes_to_verified": "unverify"}
    assert api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=settings).status == 200


def test_replace_by_key_moves_tags_priority_and_verification(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    _unverify(api, mind)
    _seed(api, mind)
    # When `a` is stored again by an agent with other tags, another priority and no expiry
    _store(api, mind, key="a", tags=["python", "AWS"], priority="critical", as_agent=True)
    stored = check(api, mind)
    a = next(m for m in stored if m["key"] == "a")
    assert (a["tags"], a["priority"], a["verified"], a["expires_at"]) == (
        ["python", "aws"],
        "critical",
        False,
        None,
    )
    # And stored again by the user, back to low priority with an expiry
    _store(api, mind, key="a", tags=["rust"], priority="low", expires_at=LATER)
    check(api, mind)


def test_put_update_of_tags_priority_and_expiry(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    _unverify(api, mind)
    ids = {k: m["id"] for k, m in _seed(api, mind).items()}

    def put(key: str, **body: Any) -> None:
        answer = api.call("PUT", f"/memory/{ids[key]}", json_body=body, **as_agent(mind))
        assert answer.status == 200, answer.text
        check(api, mind)

    put("b", tags=["rust", "docker"], priority="low")
    put("b", content="same tags, new text")
    put("c", expires_at=None)
    put("b", expires_at=SOON)
    put("a", expires_at=clock.to_iso(clock.now()))  # expired now: out of recall, by-tag and expiring
    put("a", expires_at=LATER)  # and back
    put("c", tags=[])


def test_proposals_and_their_decisions_keep_every_read_consistent(api: Api, ticking_clock: None) -> None:
    # Given seeded memories, and an agent's retag of the verified `a` held as a proposal
    mind = api.create_mind()
    ids = {k: m["id"] for k, m in _seed(api, mind).items()}
    retag = {"tags": ["python"], "priority": "critical"}
    proposed = api.call("PUT", f"/memory/{ids['a']}", json_body=retag, **as_agent(mind))
    assert proposed.status == 202, proposed.text
    # Then every read still shows `a` as verified with its tags (the tag copies carry the mark)
    stored = check(api, mind)
    assert next(m for m in stored if m["key"] == "a")["tags"] == ["docker", "aws"]
    # And after the person accepts it, every read shows the proposed tags and priority
    proposal_id = proposed.json()["proposal"]["id"]
    accepted = api.call("POST", f"/proposals/{proposal_id}/accept", **as_user(mind))
    assert accepted.status == 200, accepted.text
    stored = check(api, mind)
    assert next(m for m in stored if m["key"] == "a")["tags"] == ["python"]
    # And a rejected one changes nothing
    rejected = api.call("PUT", f"/memory/{ids['a']}", json_body={"content": "other"}, **as_agent(mind))
    assert rejected.status == 202, rejected.text
    proposal_id = rejected.json()["proposal"]["id"]
    assert api.call("POST", f"/proposals/{proposal_id}/reject", **as_user(mind)).status == 200
    assert check(api, mind) == stored


def test_verify_changes_the_counts_recall_prints(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    seeded = _seed(api, mind)
    answer = api.call("POST", f"/memory/{seeded['b']['id']}/verify", **as_user(mind))
    assert answer.status == 200, answer.text
    stored = check(api, mind)
    assert all(m["verified"] for m in stored)


def test_delete_removes_the_memory_from_every_read(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    seeded = _seed(api, mind)
    for key in ("a", "c"):
        assert api.call("DELETE", f"/memory/{seeded[key]['id']}", **as_user(mind)).status == 204
        check(api, mind)
    assert [
        i["sk"].split("#")[0] for i in _raw_items(mind.id) if i["sk"].startswith(("MEM#", "TAG#", "ID#"))
    ] == [
        "ID",
        "MEM",
        "TAG",
    ]


def test_mind_deletion_leaves_nothing_to_read(api: Api, ticking_clock: None) -> None:
    mind = api.create_mind()
    _seed(api, mind)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # Then no item of the mind is left: memories, tag copies, counters
    assert _raw_items(mind.id) == []
    # And its reads answer 404 to its owner (the mind is gone), while another mind is untouched
    for path, query in [
        ("/memory/recall", {}),
        ("/memory/by-tag", {"tag": "docker"}),
        ("/memory/expiring", {}),
    ]:
        answer = api.call("GET", path, query=query, token=mind.jwt, headers={"X-Mind-Id": mind.id})
        assert answer.status in (401, 404), answer.text
    fresh = api.create_mind(name="Fresh")
    check(api, fresh)
