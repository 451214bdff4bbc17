"""Each line of a restore checked as the write that would have stored it checks it (issue 32 item 4).

A backup's chain proves its lines are the file's, not that the service wrote them: anyone can edit
a line and chain it again. So a restore takes nothing on the file's word that a write would refuse:
the mind's settings pass PATCH /minds's own rules (`memory.model.MindPatch`), a memory's fields the
rules of POST /memory (`memory.model`'s field rules: content, key, tags, confidence, the closed
vocabularies) and what the store stamps (ids, versions, timestamps as it writes them), a proposal's
what its write builds. What breaks a rule is refused naming the line, the field and the rule
(`format.Refused`), before anything of its chunk is written. An `expires_at` in the past is kept:
a backup holds expired memories.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from synapse.core import clock, moments
from synapse.core.errors import Unprocessable
from synapse.core.ids import looks_like_id
from synapse.core.validation import Broken, Rule
from synapse.memory import proposals
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import EDITABLE_FIELDS, Memory
from synapse.memory.model import CATEGORY, CONFIDENCE, CONTENT, KEY, PRIORITY, SOURCE, TAGS, MindPatch
from synapse.portability.format import Refused

SETTINGS = ("agent_writes_to_verified", "history_retention_days", "agent_writes_critical")
MAX_WHOLE = 2**40  # a version or a ttl (epoch seconds) past this is none the service writes
WHO_MAX_CHARS = 512  # a user id (a JWT's sub) or a credential's id, in who made a change
WHO_FIELDS = 8
CLAIMS = ("verified_by", "verified_at", "changed_by")  # what a revision's `claimed` may hold


class _Line:
    """The checks of one line: each refusal names the line and the field (under `prefix`)."""

    def __init__(self, n: int, prefix: str = "") -> None:
        self.n, self.prefix = n, prefix

    def refuse(self, field: str, rule: str, message: str) -> Refused:
        return Refused(self.n, rule, message, f"{self.prefix}{field}")

    def by_rule(self, rule: Rule, value: Any, field: str) -> Any:
        """`value` through a write's own field rule; a refusal keeps that rule's name."""
        try:
            return rule.accept(value, field)
        except Broken as broken:
            first = broken.details[0]
            raise self.refuse(first["field"], first["rule"], first["message"]) from None

    def whole(self, value: Any, field: str, low: int = 1) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.refuse(field, "type", "must be a whole number")
        if not low <= value < MAX_WHOLE:
            raise self.refuse(field, "range", f"must be a whole number from {low} to {MAX_WHOLE - 1}")
        return value

    def stamp(self, value: Any, field: str, optional: bool = False) -> None:
        """A timestamp as the service writes them (UTC, milliseconds, `Z`)."""
        if value is None and optional:
            return
        try:
            fits = isinstance(value, str) and clock.to_iso(clock.from_iso(value)) == value
        except (ValueError, OverflowError):
            fits = False
        if not fits:
            raise self.refuse(field, "format", "must be a timestamp as the service writes them")

    def expiry(self, value: Any, field: str) -> str | None:
        """An `expires_at`: a timestamp as the service writes them (past ones too), or null."""
        self.stamp(value, field, optional=True)
        return value if isinstance(value, str) else None

    def occurred(self, value: Any, field: str) -> str | None:
        """An `occurred_at`: a date, or a timestamp as the service writes them, or null."""
        if value is None:
            return None
        try:
            fits = isinstance(value, str) and moments.parse(value) == value
        except moments.NotAMoment:
            fits = False
        if not fits:
            stored_as = "must be a date YYYY-MM-DD or a timestamp as the service writes them"
            raise self.refuse(field, "format", stored_as)
        return str(value)

    def identifier(self, prefix: str, value: Any, field: str, optional: bool = False) -> None:
        if value is None and optional:
            return
        if not (isinstance(value, str) and looks_like_id(prefix, value)):
            raise self.refuse(field, "id", f"must be an id starting {prefix!r}")

    def tags(self, value: Any, field: str) -> list[str]:
        """Tags as a write stores them: within the write's rules, and already trimmed, lowercase,
        each once (a write drops repeats: a stored memory never holds two)."""
        normalized = self.by_rule(TAGS, value, field)
        if normalized != value:
            raise self.refuse(field, "normalized", "must be trimmed, lowercase and each tag once")
        return list(normalized)

    def who(self, value: Any, field: str, optional: bool = False) -> None:
        """Who made a change: `source` (user or agent) and the ids that say which one."""
        if value is None and optional:
            return
        if not isinstance(value, dict) or not 0 < len(value) <= WHO_FIELDS:
            raise self.refuse(field, "type", "must say who made the change (source, and an id)")
        self.by_rule(SOURCE, value.get("source"), f"{field}.source")
        for name, text in value.items():
            if not isinstance(text, str) or not 0 < len(text) <= WHO_MAX_CHARS:
                raise self.refuse(f"{field}.{name}", "length", f"must be 1-{WHO_MAX_CHARS} characters")


# ---------------------------------------------------------------- any line


def plain(record: dict[str, Any], n: int) -> None:
    """No value anywhere in the line that JSON cannot carry back out: a number that is not finite
    (NaN, Infinity, 1e999) or text with a lone UTF-16 surrogate (neither can be stored and read)."""
    pending: list[tuple[str, Any]] = [("", record)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise Refused(n, "number", "must be a finite number", path or None)
        if isinstance(value, str) and not _encodable(value):
            raise Refused(n, "text", "holds a lone UTF-16 surrogate", path or None)
        if isinstance(value, dict):
            for name, item in value.items():
                if not _encodable(name):
                    raise Refused(n, "text", "a field name holds a lone UTF-16 surrogate", path or None)
                pending.append((f"{path}.{name}" if path else name, item))
        elif isinstance(value, list):
            pending += [(f"{path}[{index}]", item) for index, item in enumerate(value)]


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---------------------------------------------------------------- header and mind


def source(record: dict[str, Any]) -> dict[str, Any]:
    """The header's `source` (base_url, mind_id, mind_name: text of at most 2048 characters, no
    other field) and time, as the restore job keeps them."""
    line = _Line(1)
    line.identifier("bak_", record.get("backup_id"), "backup_id")
    line.stamp(record.get("created_at"), "created_at")
    found = record.get("source")
    if not isinstance(found, dict):
        raise line.refuse("source", "type", "must say where the backup came from")
    kept = {name: found.get(name) for name in ("base_url", "mind_id", "mind_name")}
    for name, value in kept.items():
        if not (isinstance(value, str) and len(value) <= 2048):
            raise line.refuse(f"source.{name}", "length", "must be text of at most 2048 characters")
    return {**kept, "created_at": record["created_at"]}


def settings(record: dict[str, Any]) -> dict[str, Any]:
    """The mind's settings, each as PATCH /minds accepts it (the same rules, not a copy)."""
    line = _Line(int(record["n"]), "settings.")
    given = record.get("settings")
    if not isinstance(given, dict):
        raise Refused(line.n, "required", "must hold the mind's settings", "settings")
    fields = {name: given.get(name) for name in SETTINGS}
    for name, value in fields.items():
        if value is None:
            raise line.refuse(name, "required", "is required")
    try:
        patch = MindPatch.from_body(fields)
    except Unprocessable as refused:
        first = refused.details[0]
        raise line.refuse(first["field"], first["rule"], first["message"]) from None
    return {name: getattr(patch, name) for name in SETTINGS}


# ---------------------------------------------------------------- memories


def memory(mind_id: str, body: Any, n: int, prefix: str = "memory.") -> Memory:
    """The `memory` of a line as a Memory of `mind_id`, each field as a write would store it."""
    line = _Line(n, prefix)
    if not isinstance(body, dict):
        raise Refused(n, "type", "must hold a memory", prefix.rstrip("."))
    line.identifier("mem_", body.get("id"), "id")
    line.by_rule(CATEGORY, body.get("category"), "category")
    line.by_rule(KEY, body.get("key"), "key")
    line.by_rule(CONTENT, body.get("content"), "content")
    tags = line.tags(body.get("tags"), "tags")
    line.by_rule(PRIORITY, body.get("priority"), "priority")
    line.by_rule(SOURCE, body.get("source"), "source")
    confidence = line.by_rule(CONFIDENCE, body.get("confidence"), "confidence")
    if not isinstance(body.get("verified"), bool):
        raise line.refuse("verified", "type", "must be true or false")
    by = body.get("verified_by")
    if by is not None and not (isinstance(by, str) and 0 < len(by) <= WHO_MAX_CHARS):
        raise line.refuse("verified_by", "length", f"must be 1-{WHO_MAX_CHARS} characters, or null")
    for name in ("verified_by", "verified_at"):  # a write clears both when a memory loses its verification
        if body.get(name) is not None and not body["verified"]:
            raise line.refuse(name, "unverified", "must be null on a memory that is not verified")
    line.whole(body.get("version"), "version")
    for name in ("created_at", "updated_at"):
        line.stamp(body.get(name), name)
    for name in ("expires_at", "verified_at"):  # a past expiry is kept: backups hold expired memories
        line.stamp(body.get(name), name, optional=True)
    line.occurred(body.get("occurred_at"), "occurred_at")
    line.identifier("prop_", body.get("pending_proposal"), "pending_proposal", optional=True)
    line.identifier("mem_", body.get("superseded_by"), "superseded_by", optional=True)
    line.stamp(body.get("superseded_at"), "superseded_at", optional=True)
    if (body.get("superseded_by") is None) != (body.get("superseded_at") is None):
        raise line.refuse("superseded_at", "superseded", "is set exactly when superseded_by is")
    if body.get("superseded_by") == body.get("id"):
        raise line.refuse("superseded_by", "self", "a memory cannot supersede itself")
    if body.get("key_derived") is not None and not isinstance(body["key_derived"], bool):
        raise line.refuse("key_derived", "type", "must be true or false")
    return memory_from_item({**body, "tags": tags, "confidence": confidence, "mind_id": mind_id})


# ---------------------------------------------------------------- revisions and proposals


def revision(record: dict[str, Any], held: Memory) -> None:
    """A `revision` line's own fields, around the memory it holds (`held`, already checked)."""
    line = _Line(int(record["n"]))
    if record.get("version") != held.version or record.get("memory_id") != held.id:
        raise line.refuse("version", "revision", "must name the version and memory of the memory it holds")
    line.who(record.get("changed_by"), "changed_by")
    line.stamp(record.get("changed_at"), "changed_at")
    if record.get("ttl") is not None:
        line.whole(record["ttl"], "ttl", low=0)


def proposal(record: dict[str, Any], held: Memory) -> dict[str, Any]:
    """A `proposal` line's fields as its write stores them; what it proposes, checked by the rules
    of the write it would make (PUT /memory's fields)."""
    line = _Line(int(record["n"]))
    line.identifier("prop_", record.get("id"), "id")
    if (record.get("memory_id"), record.get("category"), record.get("key")) != (
        held.id,
        held.category,
        held.key,
    ):
        raise line.refuse("memory_id", "proposal", "must name the memory it holds (id, category, key)")
    _choice(line, record.get("action"), "action", {a.value for a in proposals.Action}, optional=True)
    _choice(line, record.get("status"), "status", {s.value for s in proposals.Status})
    line.whole(record.get("base_version"), "base_version")
    line.who(record.get("proposed_by"), "proposed_by")
    line.who(record.get("decided_by"), "decided_by", optional=True)
    line.stamp(record.get("created_at"), "created_at")
    line.stamp(record.get("decided_at"), "decided_at", optional=True)
    if record.get("ttl") is not None:
        line.whole(record["ttl"], "ttl", low=0)
    superseding = record.get("action") == proposals.Action.SUPERSEDE.value
    line.identifier("mem_", record.get("superseded_by"), "superseded_by", optional=not superseding)
    return _proposed(line, record.get("proposed"))


def _proposed(line: _Line, proposed: Any) -> dict[str, Any]:
    if not isinstance(proposed, dict):
        raise line.refuse("proposed", "type", "must hold the proposed fields")
    rules: dict[str, Callable[[Any, str], Any]] = {
        "content": lambda value, field: line.by_rule(CONTENT, value, field),
        "tags": line.tags,
        "priority": lambda value, field: str(line.by_rule(PRIORITY, value, field)),
        "confidence": lambda value, field: line.by_rule(CONFIDENCE, value, field),
        "expires_at": line.expiry,
        "occurred_at": line.occurred,
    }
    return {name: rules[name](proposed.get(name), f"proposed.{name}") for name in EDITABLE_FIELDS}


def _choice(line: _Line, value: Any, field: str, allowed: set[str], optional: bool = False) -> None:
    if (value is None and optional) or (isinstance(value, str) and value in allowed):
        return
    raise line.refuse(field, "enum", f"must be one of: {', '.join(sorted(allowed))}")


def claimed(record: dict[str, Any]) -> dict[str, Any] | None:
    """A revision line's `claimed` (what an earlier restore could not stand behind), if any."""
    found = record.get("claimed")
    if found is None:
        return None
    line = _Line(int(record["n"]), "claimed.")
    if not isinstance(found, dict) or set(found) - {*CLAIMS, "decided_by"}:
        raise Refused(line.n, "type", f"must hold only {', '.join(CLAIMS)} or decided_by", "claimed")
    by = found.get("verified_by")
    if by is not None and not (isinstance(by, str) and 0 < len(by) <= WHO_MAX_CHARS):
        raise line.refuse("verified_by", "length", f"must be 1-{WHO_MAX_CHARS} characters, or null")
    line.stamp(found.get("verified_at"), "verified_at", optional=True)
    for name in ("changed_by", "decided_by"):
        line.who(found.get(name), name, optional=True)
    return dict(found)
