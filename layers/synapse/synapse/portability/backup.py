"""GET /minds/{mind_id}/backup: a mind's whole state as the backup format's lines, a page at a time.

A 100,000-memory mind is far more than one Lambda answer (6 MB) or one API Gateway request (29 s)
holds, so the stream comes in pages: each answer is a run of lines (application/x-ndjson) and,
until the last, a signed cursor (`X-Next-Cursor`) holding all the next page needs: where the
reading stopped (phase, last sort key), the next line's number, the running digest, the counts so
far, and a deleted memory whose `deleted` line is still due. Pages concatenated in order are the
stream; the first starts with the header, the last ends with the trailer. A page holds at most
`limit` lines, about PAGE_BYTES of them, and stops reading after BUDGET_SECONDS: memory use is
bounded by a page, never by the mind.

Order: header, mind, keys, hooks, webhooks, grants, members (metadata only: never a secret or a hash),
then memories (`MEM#`), revisions (`REV#`, live ones, with a `deleted` line after the revisions of
each memory whose newest revision is its deletion), proposals (`PROP#`, every status), trailer.
"""

import json
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.ids import looks_like_id, new_id
from synapse.minds import minds
from synapse.minds.minds import Mind
from synapse.oauth import revocation
from synapse.portability import export, format
from synapse.storage import cursor, pages, tables
from synapse.teams import members
from synapse.webhooks import hooks, subscriptions

PAGE_BYTES = 2_000_000  # of lines: escaped into Lambda's JSON answer it stays well inside 6 MB
BUDGET_SECONDS = 10.0  # reading stops after this; API Gateway waits 29 s
DEFAULT_LINES, MAX_LINES = 2000, 10_000
READ_LIMIT = 100  # items per DynamoDB query: what a page holds beyond its lines
SCOPE = "backup"
PHASES = ("memory", "revision", "proposal", "end", "done")
PREFIXES = {"memory": tables.MEMORY_PREFIX, "revision": "REV#", "proposal": "PROP#"}


class State(NamedTuple):
    """Where a backup stands between two pages (what its cursor carries)."""

    phase: str
    n: int
    digest: bytes
    backup_id: str
    counts: dict[str, int]
    after: str | None = None  # the sort key read last in this phase
    deleted: str | None = None  # "<memory id> <version> <deleted at> <category> <key>": line still due


class Page(NamedTuple):
    body: bytes
    next_cursor: str | None
    lines: int


class _Writer:
    """The lines of one page, numbered and chained as they are added."""

    def __init__(self, state: State, max_lines: int) -> None:
        self.n, self.digest, self.counts = state.n, state.digest, dict(state.counts)
        self.lines: list[bytes] = []
        self.size, self.max_lines = 0, max_lines
        self.deadline = time.monotonic() + BUDGET_SECONDS
        self.key = format.signing_key()  # each line signs the ones before it (portability.trust)

    def add(self, kind: str, fields: dict[str, Any]) -> None:
        line = format.encode(self.n, kind, self.digest, fields, self.key)
        self.digest = format.chained(self.digest, line)
        self.n += 1
        if kind in format.COUNTED_KINDS:
            self.counts[kind] = self.counts.get(kind, 0) + 1
        self.lines.append(line)
        self.size += len(line) + 1

    def full(self) -> bool:
        return (
            len(self.lines) >= self.max_lines or self.size >= PAGE_BYTES or time.monotonic() > self.deadline
        )

    def state(self, phase: str, backup_id: str, after: str | None, deleted: str | None) -> State:
        return State(phase, self.n, self.digest, backup_id, self.counts, after, deleted)


# ---------------------------------------------------------------- the first lines


def _every(page_of: Callable[[str | None], pages.Page[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every item of a short owner's list (keys, hooks, webhooks, grants, members: a mind has few)."""
    found: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        page = page_of(after)
        found += page.items
        if not page.next_cursor:
            return found
        after = page.next_cursor


def _metadata(owner: str, mind_id: str, base_url: str) -> dict[str, list[dict[str, Any]]]:
    return {
        "key": _every(lambda after: minds.list_keys(owner, mind_id, pages.MAX_LIMIT, after)),
        "hook": _every(lambda after: hooks.list_hooks(owner, mind_id, base_url, pages.MAX_LIMIT, after)),
        "webhook": _every(lambda after: subscriptions.list_owned(owner, mind_id, pages.MAX_LIMIT, after)),
        "grant": _every(lambda after: revocation.owned_grants(owner, mind_id, pages.MAX_LIMIT, after)),
        "member": _every(lambda after: members.list_members(mind_id, pages.MAX_LIMIT, after)),
    }


def _start(mind: Mind, owner: str, base_url: str, writer: _Writer) -> str:
    """Header, mind, and the metadata of its keys, hooks, webhooks, grants and members; the backup's id."""
    metadata = _metadata(owner, mind.id, base_url)
    backup_id = new_id("bak_")
    writer.add(
        format.HEADER,
        {
            "format": format.FORMAT,
            "version": format.VERSION,
            "backup_id": backup_id,
            "created_at": clock.to_iso(clock.now()),
            "source": {"base_url": base_url, "mind_id": mind.id, "mind_name": mind.name},
            "counts": {"memory": mind.memory_count, **{kind: len(found) for kind, found in metadata.items()}},
        },
    )
    writer.add(
        format.MIND,
        {"name": mind.name, "created_at": mind.created_at, "settings": mind.settings.public()},
    )
    for kind, found in metadata.items():
        for item in found:
            writer.add(kind, item)
    return backup_id


# ---------------------------------------------------------------- memories, revisions, proposals


def _deleted_line(writer: _Writer, deleted: str) -> None:
    memory_id, version, at, category, key = deleted.split(" ")
    fields = {"memory_id": memory_id, "version": int(version), "deleted_at": at, "category": category}
    writer.add("deleted", {**fields, "key": key})


def _add_item(phase: str, item: dict[str, Any], writer: _Writer, deleted: str | None) -> str | None:
    """The item's line; for a revision, the `deleted` line of the memory before it if it is due.
    Returns the deleted line due after this item (revisions only)."""
    if phase == "memory":
        writer.add("memory", export.memory_fields(item))
        return None
    if phase == "proposal":
        writer.add("proposal", export.proposal_fields(item))
        return None
    fields = export.revision_fields(item)
    if deleted is not None and deleted.split(" ", 1)[0] != fields["memory_id"]:
        _deleted_line(writer, deleted)
    writer.add("revision", fields)
    if fields["change"] != "deleted":
        return None
    memory = fields["memory"]
    parts = (fields["memory_id"], fields["version"], fields["changed_at"], memory["category"], memory["key"])
    return " ".join(str(part) for part in parts)


def _query(mind_id: str, phase: str) -> dict[str, Any]:
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ConsistentRead": True,
        "Limit": READ_LIMIT,
    }
    values: dict[str, Any] = {"pk": mind_id, "prefix": PREFIXES[phase]}
    if phase == "revision":  # live revisions: not a clock-only stub, not past its ttl
        params["FilterExpression"] = (
            "attribute_exists(#memory) AND (attribute_not_exists(#ttl) OR #ttl > :now)"
        )
        params["ExpressionAttributeNames"] = {"#memory": "memory", "#ttl": "ttl"}
        values["now"] = int(clock.now().timestamp())
    params["ExpressionAttributeValues"] = tables.values(**values)
    return params


def _read(mind_id: str, state: State, writer: _Writer) -> State:
    """Lines of the state's phase until the page is full or the phase ends (then the next phase)."""
    phase, after, deleted = state.phase, state.after, state.deleted
    params = _query(mind_id, phase)
    while not writer.full():
        if after is not None:
            params["ExclusiveStartKey"] = tables.dump({"pk": mind_id, "sk": after})
        items, last = next(tables.query_pages(**params))
        for item in items:
            if writer.full():
                return writer.state(phase, state.backup_id, after, deleted)
            deleted = _add_item(phase, item, writer, deleted)
            after = str(item["sk"])
        if last is None:
            if deleted is not None:
                _deleted_line(writer, deleted)
            return writer.state(PHASES[PHASES.index(phase) + 1], state.backup_id, None, None)
        after = str(tables.load(last)["sk"])  # the raw LastEvaluatedKey
    return writer.state(phase, state.backup_id, after, deleted)


def page(mind: Mind, owner: str, base_url: str, after: str | None, max_lines: int = DEFAULT_LINES) -> Page:
    """The next page of the mind's backup: from the header when `after` is None."""
    state = _decoded(mind.id, after) if after else None
    writer = _Writer(state or State("memory", 1, format.START, "", {}), max_lines)
    if state is None:
        state = writer.state("memory", _start(mind, owner, base_url, writer), None, None)
    while state.phase in PREFIXES and not writer.full():
        state = _read(mind.id, state, writer)
    if state.phase == "end" and not writer.full():
        writer.add(format.END, {"lines": writer.n - 1, "counts": writer.counts})
        state = writer.state("done", state.backup_id, None, None)
    body = b"".join(line + b"\n" for line in writer.lines)
    next_cursor = None if state.phase == "done" else _encoded(mind.id, state)
    return Page(body, next_cursor, len(writer.lines))


# ---------------------------------------------------------------- the cursor


def _encoded(mind_id: str, state: State) -> str:
    position = {
        "p": state.phase,
        "n": str(state.n),
        "d": state.digest.hex(),
        "b": state.backup_id,
        "c": json.dumps(state.counts, separators=(",", ":"), sort_keys=True),
    }
    if state.after is not None:
        position["k"] = state.after
    if state.deleted is not None:
        position["g"] = state.deleted
    return cursor.encode(mind_id, SCOPE, position)


def _counts(text: Any) -> dict[str, int]:
    counts = json.loads(text) if isinstance(text, str) else None
    if not isinstance(counts, dict) or not all(
        kind in format.COUNTED_KINDS and isinstance(count, int) for kind, count in counts.items()
    ):
        raise cursor.invalid("malformed position")
    return counts


def _decoded(mind_id: str, token: str) -> State:
    """A cursor's state, if it is one of this mind's backup cursors (signed) and well formed."""
    position = cursor.decode(token, mind_id, SCOPE)
    phase, n, digest, after = position.get("p"), position.get("n"), position.get("d"), position.get("k")
    backup_id, deleted = position.get("b"), position.get("g")
    well_formed = (
        phase in PREFIXES or phase == "end",
        isinstance(n, str) and n.isascii() and n.isdigit() and int(n) > 1,
        isinstance(digest, str) and format.HEX_DIGEST.fullmatch(digest) is not None,
        isinstance(backup_id, str) and looks_like_id("bak_", backup_id),
        after is None or (phase in PREFIXES and str(after).startswith(PREFIXES[str(phase)])),
        deleted is None or (phase == "revision" and len(str(deleted).split(" ")) == 5),
    )
    if not all(well_formed):
        raise cursor.invalid("malformed position")
    return State(
        str(phase),
        int(str(n)),
        bytes.fromhex(str(digest)),
        str(backup_id),
        _counts(position.get("c")),
        after,
        deleted,
    )
