"""A matrix of minds and recall queries whose answers must stay byte for byte what they were.

`tests/support/recall_matrix.json` holds the answers (text and JSON) recorded with the recall code
before issue 23 item 6 cut its DynamoDB calls; `answers` recomputes them with the code of today.
Everything is deterministic (the `moved` clock) except ids, which `_normalised` names by key; each
answer is kept as the SHA-256 of its bytes beside the keys it shows (what a failure points at).
Record again only for an intended change of recall's output:
`SYNAPSE_RECORD_RECALL_MATRIX=1 .venv/bin/pytest tests/integration/test_recall_calls.py -k matrix`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from synapse.core import clock
from synapse.memory import sweep

from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent
from tests.support.clock import EXPIRY_START, MovableClock

GOLDEN = Path(__file__).with_name("recall_matrix.json")
CATEGORIES = ["identity", "preference", "fact", "project", "skill", "note"]
PRIORITIES = ["critical", "high", "normal", "normal", "low", "high", "low"]
TAGS = [[], ["work"], ["work", "docker"], ["home"], ["docker"], []]
QUERIES: list[dict[str, Any]] = [
    {},
    {"limit": 1},
    {"limit": 5},
    {"limit": 12},
    {"max_chars": 600},
    {"max_chars": 1500},
    {"max_chars": 4000, "limit": 30},
    {"category": "project"},
    {"category": ["fact", "skill"]},
    {"category": ["identity", "note", "preference"], "limit": 4},
    {"tag": "docker"},
    {"tag": "work", "limit": 3},
    {"tag": "work", "category": ["fact", "project"]},
    {"tag": "nothing"},
    {"category": "mistake"},
    {"q": "docker deployment"},
    {"q": "coffee", "max_chars": 900},
    {"q": "docker", "category": "fact", "limit": 3},
]


def _iso(moved: MovableClock, **delta: float) -> str:
    return clock.to_iso(moved.at + timedelta(**delta))


def _store(api: Api, mind: MindHandle, moved: MovableClock, n: int, **extra: Any) -> None:
    moved.advance(seconds=1)
    fields: dict[str, Any] = {
        "category": CATEGORIES[n % len(CATEGORIES)],
        "key": f"k{n:03d}",
        "content": f"Memory {n} about {'docker deployment' if n % 4 == 0 else 'coffee'}\nline two {n}",
        "tags": TAGS[n % len(TAGS)],
        "priority": PRIORITIES[n % len(PRIORITIES)],
        **extra,
    }
    answer = api.store(mind, as_agent=n % 3 == 0, **fields)
    assert answer.status in (200, 201), answer.text


def stock(api: Api, mind: MindHandle, moved: MovableClock, count: int, first: int = 0) -> None:
    """`count` memories: every category, priority and tag mix, a third by an agent (unverified),
    every 5th expiring within minutes (expired once the clock moves a day), every 7th in a week."""
    for n in range(first, first + count):
        extra: dict[str, Any] = {}
        if n % 5 == 1:
            extra["expires_at"] = _iso(moved, minutes=5)
        elif n % 7 == 2:
            extra["expires_at"] = _iso(moved, days=7)
        _store(api, mind, moved, n, **extra)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _normalised(text: str, ids: dict[str, str]) -> str:
    for raw, name in ids.items():
        text = text.replace(raw, name)
    return text


def _recall(api: Api, mind: MindHandle, query: dict[str, Any]) -> dict[str, Any]:
    text = api.call("GET", "/memory/recall", query=query, **as_agent(mind))
    body = api.call("GET", "/memory/recall", query={**query, "format": "json"}, **as_agent(mind))
    assert text.status == 200 and body.status == 200, (text.text, body.text)
    pairs = (("text", text), ("json", body))
    data = body.json()
    ids = {mind.id: "MIND", **{m["id"]: f"ID:{m['key']}" for m in data["memories"]}}
    ids |= {raw: "ID:relevant" for raw in data["relevant"] if raw not in ids}
    shown = {"shown": [m["key"] for m in data["memories"]], "left_out": data["left_out"]}
    digests = {f"{kind}_sha256": _digest(_normalised(answer.text, ids)) for kind, answer in pairs}
    return {"query": query, **shown, **digests}


def answers(api: Api, moved: MovableClock, pump: Pump) -> dict[str, list[dict[str, Any]]]:
    """Every query against: a small mind; the same a day on (expired, not swept); after the sweep,
    with new memories expired but not swept on top; and a mind of 160 (more than one page)."""
    moved.at = EXPIRY_START
    small, big = api.create_mind(name="Small mind"), api.create_mind(name="Big «mind» ✓")
    stock(api, small, moved, 40)
    stock(api, big, moved, 160)
    pump.run_once()
    found: dict[str, list[dict[str, Any]]] = {"fresh": [_recall(api, small, q) for q in QUERIES]}
    moved.at = EXPIRY_START + timedelta(days=1)
    found["expired"] = [_recall(api, small, q) for q in QUERIES]
    sweep.run(at=moved.at)
    stock(api, small, moved, 15, first=40)
    moved.advance(hours=2)
    found["swept_then_expired"] = [_recall(api, small, q) for q in QUERIES]
    found["big"] = [_recall(api, big, q) for q in QUERIES if "q" not in q]
    return found


def recorded() -> dict[str, list[dict[str, Any]]]:
    data: dict[str, list[dict[str, Any]]] = json.loads(GOLDEN.read_text())
    return data


def record(found: dict[str, list[dict[str, Any]]]) -> None:
    GOLDEN.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n")


def typical_mind(api: Api, moved: MovableClock, count: int = 100) -> MindHandle:
    """A mind of `count` memories over six categories, a few tags, some low, some unverified, some
    expired a day ago and not swept yet, some expiring next week: the clock stands a day on."""
    moved.at = EXPIRY_START
    mind = api.create_mind(name="Typical mind")
    stock(api, mind, moved, count)
    moved.at = EXPIRY_START + timedelta(days=1)
    return mind
