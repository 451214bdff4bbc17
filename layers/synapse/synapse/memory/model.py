"""The rules on what clients send: the request bodies of memories, minds and keys.

They are `core.validation.Body` classes: strict over already-parsed JSON; every failure becomes a
422 whose details name the field and the rule. The memory itself is in `kinds`, and how a write
merges into it in `changes`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from synapse.core import clock, moments
from synapse.core.ids import looks_like_id
from synapse.core.validation import Body, Invalid, Rule, accepts, trimmed_text, trimmed_text_pattern
from synapse.memory import keys
from synapse.memory.kinds import (
    CONTENT_MAX_BYTES,
    KEY_MAX_CHARS,
    KEY_PATTERN,
    LABEL_MAX_CHARS,
    NAME_MAX_CHARS,
    TAG_MAX_CHARS,
    TAGS_MAX,
    Category,
    Priority,
    Source,
)
from synapse.minds.minds import AGENT_WRITES_CRITICAL, AGENT_WRITES_TO_VERIFIED
from synapse.minds.minds import HISTORY_RETENTION_DAYS_RANGE as RETENTION_DAYS

# ---------------------------------------------------------------- field rules


def _check_key(value: str) -> str:
    if not 1 <= len(value) <= KEY_MAX_CHARS:
        raise Invalid("length", f"must be 1-{KEY_MAX_CHARS} characters")
    if not KEY_PATTERN.fullmatch(value):  # fullmatch: `$` alone would let a trailing newline in
        raise Invalid(
            "pattern", "must be lowercase snake_case: a-z, 0-9 and single underscores between words"
        )
    return value


def _check_content(value: str) -> str:
    size = len(value.encode("utf-8"))
    if size == 0:
        raise Invalid("length", "must not be empty")
    if size > CONTENT_MAX_BYTES:
        raise Invalid("size", f"must be at most {CONTENT_MAX_BYTES} bytes of UTF-8 (got {size})")
    return value


def normalize_tags(values: list[str]) -> list[str]:
    """Trim, lowercase, de-duplicate keeping first order; then enforce the limits."""
    seen: dict[str, None] = {}
    for raw in values:
        tag = raw.strip().lower()
        if not 1 <= len(tag) <= TAG_MAX_CHARS:
            raise Invalid("length", f"each tag must be 1-{TAG_MAX_CHARS} characters after trimming")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in tag):
            raise Invalid("characters", "tags must not contain control characters")
        seen.setdefault(tag, None)
    if len(seen) > TAGS_MAX:
        raise Invalid("max_items", f"at most {TAGS_MAX} distinct tags")
    return list(seen)


def _check_expires_at(value: str | None) -> str | None:
    """Any well-formed moment, past ones too: what a stored memory or a proposal may hold."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise Invalid("format", "must be an ISO 8601 timestamp, e.g. 2026-12-31T23:59:00Z") from None
    if moment.tzinfo is None:
        raise Invalid("timezone", "must carry a time zone (Z or an offset such as +02:00)")
    try:
        return clock.to_iso(moment)
    except (OverflowError, ValueError):  # e.g. 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise Invalid("range", "must fall between the years 1 and 9999 in UTC") from None


def _check_occurred_at(value: str) -> str:
    """A date stays a date; a timestamp must carry a zone and is stored in UTC. Past and future
    are both allowed: a memory may be about something that will happen (an appointment)."""
    try:
        return moments.parse(value)
    except moments.NotAMoment as refused:
        raise Invalid(refused.rule, refused.message) from None


EXPIRY_GRACE = timedelta(seconds=60)
"""How far in the past a write's `expires_at` still counts as now: a client whose clock runs a
little behind the service's can still expire a memory at once (SPEC's "expire now")."""


def _check_future_expiry(value: str | None) -> str | None:
    """A write's expiry (issue 34 item 5): not in the past, beyond `EXPIRY_GRACE`. A past one would
    store a memory already gone from recall, and an agent that got the year wrong would not know."""
    stamped = _check_expires_at(value)
    if stamped is None:
        return None
    now = clock.now()
    if clock.from_iso(stamped) < now - EXPIRY_GRACE:
        raise Invalid(
            "future",
            f"is in the past ({stamped}, now {clock.to_iso(now)}): give a future time, or delete "
            "the memory (MCP: forget) to remove it now",
        )
    return stamped


# ---------------------------------------------------------------- the bodies

KEY = Rule(
    check=_check_key,
    schema={"pattern": KEY_PATTERN.pattern, "minLength": 1, "maxLength": KEY_MAX_CHARS},
)
# A write's key: left out, it is derived from the content (`keys.derived_key`).
KEY_OR_DERIVED = KEY._replace(
    schema={
        **KEY.schema,
        "description": "Derived from the content when left out: its first words and a short digest.",
    }
)
CONTENT = Rule(
    check=_check_content,
    schema={
        "minLength": 1,
        "maxLength": CONTENT_MAX_BYTES,
        "description": f"At most {CONTENT_MAX_BYTES} bytes of UTF-8.",
    },
)
TAGS = Rule(
    "array",
    items=Rule(
        schema={
            "pattern": trimmed_text_pattern(TAG_MAX_CHARS),
            "description": f"1-{TAG_MAX_CHARS} characters once trimmed, no control characters.",
        }
    ),
    check=normalize_tags,
    schema={
        "maxItems": TAGS_MAX,
        "description": f"At most {TAGS_MAX}; trimmed, lowercased, repeats dropped.",
    },
)
CONFIDENCE = Rule("number", minimum=0.0, maximum=1.0)
EXPIRES_AT = Rule(
    check=_check_future_expiry,
    schema={
        "format": "date-time",
        "description": (
            "ISO 8601 with a time zone (Z or an offset). Not in the past: a time more than "
            f"{int(EXPIRY_GRACE.total_seconds())} s before now is refused (422, rule `future`); "
            "up to that counts as now and expires the memory at once."
        ),
    },
)
OCCURRED_AT = Rule(
    check=_check_occurred_at,
    schema={
        "anyOf": [{"format": "date"}, {"format": "date-time"}],
        "description": (
            "When the event happened or was said, apart from when it was stored: a date YYYY-MM-DD "
            "(kept as a date) or an ISO 8601 timestamp with a time zone (stored in UTC). Past or future. "
            "Reads' after/before use it, and created_at where it is null."
        ),
    },
)
# A stored moment, past ones too: what a proposal made by a write holds when it is later accepted.
EXPIRES_AT_STORED = Rule(check=_check_expires_at, schema=EXPIRES_AT.schema)
CATEGORY, PRIORITY, SOURCE = Rule(choices=Category), Rule(choices=Priority), Rule(choices=Source)
SUPERSEDES_MAX = 20


def _check_memory_id(value: str) -> str:
    if not looks_like_id("mem_", value):
        raise Invalid("format", f"{value[:80]!r} is not a memory id (mem_...)")
    return value


def _check_supersedes(values: list[str]) -> list[str]:
    """Memory ids, each once (first order kept); whether each is one of this mind's is the
    store's check (`memory.supersede`), which answers 422 on `supersedes[i]` too."""
    if len(values) > SUPERSEDES_MAX:
        raise Invalid("max_items", f"at most {SUPERSEDES_MAX} memory ids")
    return list(dict.fromkeys(values))


SUPERSEDES = Rule(
    "array",
    items=Rule(check=_check_memory_id, schema={"pattern": "^mem_[A-Za-z0-9_-]{1,64}$"}),
    check=_check_supersedes,
    schema={
        "maxItems": SUPERSEDES_MAX,
        "description": (
            "Ids of this mind's memories that this write replaces: they are kept, marked "
            "`superseded_by` this memory, and leave recall, search, by-tag, the list and expiring "
            "reads unless a read asks `include_superseded=true`. An agent's write over a verified "
            "memory makes that part a proposal."
        ),
    },
)


class MemoryWrite(Body):
    """The body of `POST /memory`: every client field of SPEC §1. Only `content` is required: without
    a category the memory is a `note`, and without a key the server derives one from the content
    (the same text gives the same key, so storing it twice replaces one memory)."""

    category: Category = accepts(CATEGORY, default=Category.NOTE)
    key: str = accepts(KEY_OR_DERIVED, default=None, nullable=False)
    content: str = accepts(CONTENT)
    tags: list[str] = accepts(TAGS, default_factory=list)
    priority: Priority = accepts(PRIORITY, default=Priority.NORMAL)
    confidence: float | None = accepts(CONFIDENCE, default=None)
    expires_at: str | None = accepts(EXPIRES_AT, default=None)
    occurred_at: str | None = accepts(OCCURRED_AT, default=None)
    source: Source | None = accepts(SOURCE, default=None)
    supersedes: list[str] = accepts(SUPERSEDES, default_factory=list)

    def __init__(self, **values: Any) -> None:
        """A key left out is derived from the content here, before the write looks for the memory
        its (category, key) holds: every door that builds a `MemoryWrite` derives it alike."""
        super().__init__(**values)
        if self.key is None:
            object.__setattr__(self, "key", keys.derived_key(self.category.value, self.content))

    @property
    def key_derived(self) -> bool:
        """Whether the key says nothing the content does not: derived here, or by a client that
        derived it the same way (`keys.is_derived`)."""
        return "key" not in self.sent or keys.is_derived(self.category.value, self.key, self.content)


class MemoryPatch(Body):
    """The body of `PUT /memory/{id}`: fields left out stay; `expires_at: null` and
    `occurred_at: null` clear."""

    content: str | None = accepts(CONTENT, default=None, nullable=False)
    tags: list[str] | None = accepts(TAGS, default=None, nullable=False)
    priority: Priority | None = accepts(PRIORITY, default=None, nullable=False)
    confidence: float | None = accepts(CONFIDENCE, default=None, nullable=False)
    expires_at: str | None = accepts(EXPIRES_AT, default=None)
    occurred_at: str | None = accepts(OCCURRED_AT, default=None)
    category: Category | None = accepts(CATEGORY, default=None)
    key: str | None = accepts(KEY, default=None)
    source: Source | None = accepts(SOURCE, default=None)
    supersedes: list[str] = accepts(SUPERSEDES, default_factory=list)


class StoredPatch(MemoryPatch):
    """A `MemoryPatch` as a proposal holds it: its expiry was checked when the write was made, so
    once it has passed (an "expire now" proposal accepted later) it is still one a write stores."""

    expires_at: str | None = accepts(EXPIRES_AT_STORED, default=None)


def _trimmed(max_chars: int) -> Rule:
    """Text without its surrounding whitespace, 1 to `max_chars` characters of it and no control
    character: a tag's rule (`normalize_tags`), so a name or a label is one line of plain text."""

    def check(value: str) -> str:
        return trimmed_text(value, max_chars)

    described = f"1-{max_chars} characters once trimmed, no control characters."
    return Rule(check=check, schema={"pattern": trimmed_text_pattern(max_chars), "description": described})


NAME, LABEL = _trimmed(NAME_MAX_CHARS), _trimmed(LABEL_MAX_CHARS)


class MindWrite(Body):
    name: str = accepts(NAME)


class KeyWrite(Body):
    label: str = accepts(LABEL, default="default")


Scope = Literal["read", "write", "delete"]
ALL_SCOPE_NAMES: tuple[Scope, ...] = ("read", "write", "delete")


def _distinct_scopes(scopes: list[Scope]) -> list[Scope]:
    if len(set(scopes)) != len(scopes):
        raise Invalid("unique", "must not name a scope twice")
    return scopes


class KeyCreate(KeyWrite):
    """The body of `POST /minds/{mind_id}/keys`: a label and what the key may do (default: all)."""

    scopes: list[Scope] = accepts(
        Rule(
            "array",
            items=Rule(choices=ALL_SCOPE_NAMES),
            min_items=1,
            check=_distinct_scopes,
            schema={"uniqueItems": True},
        ),
        default_factory=lambda: list(ALL_SCOPE_NAMES),
    )


class MindPatch(Body):
    """The body of `PATCH /minds/{mind_id}`: a new name and/or settings; what is left out stays."""

    nothing_given = "give a name or a setting to change"  # a body of nulls changes nothing either

    name: str | None = accepts(NAME, default=None)
    agent_writes_to_verified: Literal["propose", "unverify"] | None = accepts(
        Rule(choices=AGENT_WRITES_TO_VERIFIED), default=None
    )
    history_retention_days: int | None = accepts(
        Rule("integer", minimum=RETENTION_DAYS[0], maximum=RETENTION_DAYS[1]), default=None
    )
    agent_writes_critical: Literal["allow", "propose", "deny"] | None = accepts(
        Rule(choices=AGENT_WRITES_CRITICAL), default=None
    )
