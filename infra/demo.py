"""Demo data for `make demo` (`SYNAPSE_DEMO=1 make run`): the example mind (docs/rules.md §4), for the
dev user.

"Michael's Mind" and its 12 memories are stored through the runner's own HTTP API, as a person and
their agent would: the memories a person wrote with the dev JWT (verified), the two an agent wrote
with the mind's Mind Key (unverified). Recall then reads exactly as docs/rules.md §4 and docs/api.md show.

Idempotent: a later start finds the mind by its name instead of creating a second one, stores again
only what is missing or expired (and everything stored after it, so recall order stays as shown), and
prints a fresh Mind Key labelled `demo` (the server keeps only hashes; the earlier one is revoked, and
the `default` key the mind was created with too, since its secret is never printed).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

NAME = "Michael's Mind"
KEY_LABEL = "demo"
EXPIRES_IN = timedelta(days=90)


@dataclass(frozen=True)
class Demo:
    category: str
    key: str
    content: str
    tags: tuple[str, ...] = ()
    priority: str = "normal"
    by_agent: bool = False  # written with the Mind Key: unverified, confidence 0.7
    expires: bool = False  # expires EXPIRES_IN after it is stored

    def body(self, now: datetime) -> dict[str, Any]:
        body: dict[str, Any] = {
            "category": self.category,
            "key": self.key,
            "content": self.content,
            "tags": list(self.tags),
            "priority": self.priority,
        }
        if self.expires:
            body["expires_at"] = (now + EXPIRES_IN).strftime("%Y-%m-%dT%H:%M:%SZ")
        return body


# In the order they are stored: recall shows the most recently updated first within a priority, so
# docs/rules.md §4's three come last. 12 memories, 10 verified, 2 unverified (an agent wrote them).
MEMORIES = (
    Demo("note", "reading_list", "Designing Data-Intensive Applications; SQLite internals",
         ("books",), "low"),
    Demo("note", "conference_talk", "Talk on agent memory at PyCon DE in April; slides due in March",
         ("talks", "python"), "low", expires=True),
    Demo("skill", "python", "Python since 2012: typing, asyncio, packaging", ("python",)),
    Demo("fact", "home_timezone", "Lives in Berlin (Europe/Berlin, CET/CEST)", ("location",)),
    Demo("mistake", "swarm_overlay_mtu", "Overlay network MTU 1500 broke swarm DNS over WireGuard; "
         "set 1420", ("docker", "swarm", "networking")),
    Demo("project", "swarm_cluster", "Home lab runs Docker Swarm on three nodes; migrating to k3s",
         ("docker", "swarm")),
    Demo("preference", "code_style", "Type hints everywhere, ruff format, small functions",
         ("python", "style")),
    Demo("context", "current_focus", "Reviewing the v1.6.0 docs pull request this week",
         ("synapse",), by_agent=True),
    Demo("project", "synapse_stack", "AWS SAM, Lambda, DynamoDB, SQLite FTS5 on EFS",
         ("synapse", "aws")),
    Demo("project", "synapse_status", "v1.5.0 deployed, working on v1.6.0 docs",
         ("synapse", "deployment"), "high", by_agent=True),
    Demo("preference", "communication_style", "Prefers concise technical responses",
         ("communication",), "high"),
    Demo("identity", "user_name", "Michael Schäfer", ("person", "identity"), "critical"),
)  # fmt: skip


class DemoError(Exception):
    pass


@dataclass
class Seeded:
    mind_id: str
    mind_key: str
    created: bool
    stored: list[str] = field(default_factory=list)


class _Api:
    def __init__(self, base_url: str, jwt: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.jwt = jwt

    def call(
        self, method: str, path: str, body: Any = None, *, key: str | None = None, mind: str = ""
    ) -> Any:
        headers = {"Authorization": f"Bearer {key or self.jwt}", "Content-Type": "application/json"}
        if mind:
            headers["X-Mind-Id"] = mind
        data = None if body is None else json.dumps(body).encode()
        url = self.base_url + path  # the runner's own http://127.0.0.1 URL
        request = urllib.request.Request(url, data, headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
                raw = answer.read()
        except urllib.error.HTTPError as error:
            raise DemoError(f"{method} {path} answered {error.code}: {error.read()[:300]!r}") from None
        return json.loads(raw) if raw else None

    def pages(self, path: str, listed: str, mind: str = "") -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, following `next_cursor`."""
        joiner = "&" if "?" in path else "?"
        cursor = None
        while True:
            after = f"&cursor={quote(cursor)}" if cursor else ""
            page = self.call("GET", f"{path}{joiner}limit=100{after}", mind=mind)
            yield from page[listed]
            cursor = page.get("next_cursor")
            if not cursor:
                return


def seed(base_url: str, jwt: str) -> Seeded:
    """Create the example mind (docs/rules.md §4) for the JWT's user, or bring an earlier one back to it."""
    api = _Api(base_url, jwt)
    existing = next((m for m in api.pages("/minds", "minds") if m["name"] == NAME), None)
    if existing is None:
        created = api.call("POST", "/minds", {"name": NAME})
        mind_id = created["mind"]["id"]
        # Its first key is labelled `default`: swapped for a `demo` one, so that every run prints the
        # one key it leaves working and the next run revokes it (they never pile up)
        api.call("DELETE", f"/minds/{mind_id}/keys/{quote(created['mind_key']['id'])}")
        seeded = Seeded(mind_id, _fresh_key(api, mind_id), True)
    else:
        seeded = Seeded(existing["id"], _fresh_key(api, existing["id"]), False)
    for demo in _to_store(api, seeded):
        key = seeded.mind_key if demo.by_agent else None
        api.call("POST", "/memory", demo.body(datetime.now(UTC)), key=key, mind=seeded.mind_id)
        seeded.stored.append(demo.key)
    return seeded


def _fresh_key(api: _Api, mind_id: str) -> str:
    """A new `demo` Mind Key, the earlier ones revoked (their secrets were only ever printed)."""
    earlier = [old for old in api.pages(f"/minds/{mind_id}/keys", "keys") if old["label"] == KEY_LABEL]
    for old in earlier:  # read whole first: deleting while paging would move the cursor's ground
        api.call("DELETE", f"/minds/{mind_id}/keys/{quote(old['id'])}")
    key: str = api.call("POST", f"/minds/{mind_id}/keys", {"label": KEY_LABEL})["key"]
    return key


def _to_store(api: _Api, seeded: Seeded) -> tuple[Demo, ...]:
    """The demo memories from the first one missing or expired on: all of them for a new mind."""
    if seeded.created:
        return MEMORIES
    memories = api.pages("/memory?include_expired=true", "memories", mind=seeded.mind_id)
    present = {(m["category"], m["key"]) for m in memories if not m.get("expired")}
    for index, demo in enumerate(MEMORIES):
        if (demo.category, demo.key) not in present:
            return MEMORIES[index:]
    return ()


def announce(base_url: str, seeded: Seeded) -> str:
    """What the runner prints: the mind, then the line to paste, last (what a terminal shows at the
    bottom, under the requests the seeding logged)."""
    state = "created" if seeded.created else "already there"
    stored = f"; stored {len(seeded.stored)} memories" if seeded.stored else ""
    return "\n".join(
        [
            "",
            f"Demo mind ({state}{stored}): {NAME}, the example of docs/rules.md §4.",
            "Paste the export line below, then recall the mind:",
            '  curl -s "$BASE/memory/recall" -H "Authorization: Bearer $MIND_KEY"',
            f"export BASE={base_url} MIND_ID={seeded.mind_id} MIND_KEY={seeded.mind_key}",
        ]
    )


def run(base_url: str, jwt: str | None) -> str:
    """Seed and say so; a failure is reported, never fatal to the runner."""
    if jwt is None:
        return "synapse-local: SYNAPSE_DEMO needs the dev JWT (not available with SYNAPSE_JWKS_URL); no demo"
    try:
        return announce(base_url, seed(base_url, jwt))
    except (DemoError, OSError, KeyError, ValueError) as error:
        return f"synapse-local: demo data not created: {error}"
