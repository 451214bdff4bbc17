"""The stored memory (a NamedTuple) and its closed vocabularies: category, priority, source.

Apart from `model` (the request bodies) because the authorizer, the indexer and the read paths
need these and nothing of the body rules (issue 14, cold start)."""

import re
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.sources import Source as Source  # where it lived: `memory.kinds.Source` still works

# What a client may send (the request bodies in `model` enforce these; queries and OpenAPI name them)
KEY_PATTERN = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")
KEY_MAX_CHARS = 128
CONTENT_MAX_BYTES = 32 * 1024
TAGS_MAX = 20
TAG_MAX_CHARS = 64
NAME_MAX_CHARS = 100
LABEL_MAX_CHARS = 100
# What a write may change after creation (category and key are immutable; the rest is stamped).
EDITABLE_FIELDS = ("content", "tags", "priority", "confidence", "expires_at", "occurred_at")


class Category(StrEnum):
    IDENTITY = "identity"
    PREFERENCE = "preference"
    FACT = "fact"
    PROJECT = "project"
    SKILL = "skill"
    MISTAKE = "mistake"
    CONTEXT = "context"
    NOTE = "note"


class Priority(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Recall order: critical first."""
        return _PRIORITY_RANK[self]


_PRIORITY_RANK = {Priority.CRITICAL: 0, Priority.HIGH: 1, Priority.NORMAL: 2, Priority.LOW: 3}


# Tags beginning with `app:` are for applications' own use (docs/api.md "Application data"). A
# memory tagged `app:private` is an application's data, not the person's: recall and search leave
# it out unless their `tag` filter asks for a tag (an app reads its own data by its tags).
APP_TAG_PREFIX = "app:"
APP_PRIVATE_TAG = "app:private"


class Memory(NamedTuple):
    """A stored memory, read-only. A NamedTuple rather than a frozen dataclass: `dataclass()` compiles
    its methods as the class is built, ~1 ms of the cold start of every handler that reads or writes
    memories (issue 35). A changed copy is `memory._replace(...)`."""

    id: str
    mind_id: str
    category: str
    key: str
    content: str
    tags: list[str]
    priority: str
    source: str
    verified: bool
    confidence: float
    expires_at: str | None
    created_at: str
    updated_at: str
    version: int
    verified_at: str | None = None
    verified_by: str | None = None
    pending_proposal: str | None = None  # the id of an agent's change waiting for a person's review
    occurred_at: str | None = None  # when the event happened or was said (a date or a UTC timestamp)
    superseded_by: str | None = None  # the id of the memory that replaced this one
    superseded_at: str | None = None
    key_derived: bool = False  # the server derived the key from the content (`memory.keys`): recall omits it

    def is_expired(self, at: datetime | None = None) -> bool:
        return self.expires_at is not None and self.expires_at <= clock.to_iso(at or clock.now())

    def public(self, at: datetime | None = None) -> dict[str, Any]:
        """The JSON a client sees: SPEC's field names, plus `expired`."""
        return {**self._asdict(), "tags": list(self.tags), "expired": self.is_expired(at)}

    @property
    def priority_rank(self) -> int:
        return Priority(self.priority).rank
