"""Typed models of the JSON Synapse answers (docs/api.md). Fields the server adds later are kept
(`extra="allow"`), so an older client still reads a newer server's answers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from synapse_client._vocabulary import CATEGORIES as CATEGORIES
from synapse_client._vocabulary import PRIORITIES as PRIORITIES

Category = Literal["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
Priority = Literal["critical", "high", "normal", "low"]


class Model(BaseModel):
    # defer_build: a model's validator is built when it first reads an answer, not at import, so a
    # command pays only for the models it uses (the CLI's start, an agent hook's)
    model_config = ConfigDict(extra="allow", defer_build=True)


class Memory(Model):
    """A memory. A write's answer to a credential without the `read` scope leaves out what it says:
    `content` is then "" and `tags` [] (docs/auth.md#what-answers-show)."""

    id: str
    mind_id: str
    category: str
    key: str
    content: str = ""
    tags: list[str] = []
    priority: str = "normal"
    source: str = "agent"
    verified: bool = False
    confidence: float = 0.7
    expires_at: str | None = None
    created_at: str
    updated_at: str
    version: int = 1
    verified_at: str | None = None
    verified_by: str | None = None
    expired: bool = False
    pending_proposal: str | None = None
    key_derived: bool = False  # the server derived the key from the content (recall leaves it out)
    occurred_at: str | None = None  # when the event happened: a date, or a UTC timestamp
    superseded_by: str | None = None  # the newer memory that replaced this one
    superseded_at: str | None = None


class MindSettings(Model):
    agent_writes_to_verified: str = "propose"
    agent_writes_critical: str = "allow"
    history_retention_days: int = 90


class Mind(Model):
    id: str
    name: str
    created_at: str
    updated_at: str
    memory_count: int = 0
    settings: MindSettings | None = None
    role: str | None = None  # yours on the mind: owner, reviewer, editor or viewer (a shared mind)


class MindKey(Model):
    """A Mind Key as listed (no secret), or as just created (`key` holds the secret, shown once)."""

    id: str
    label: str = "default"
    created_at: str
    prefix: str | None = None
    last_used_at: str | None = None
    key: str | None = None
    scopes: list[str] | None = None


class CreatedMind(Model):
    mind: Mind
    mind_key: MindKey


class SearchHit(Model):
    """One search result. `relevance`: `strong` (an answer to act on) or `weak` (related at best): when
    no hit is strong, say you don't know rather than guess; `score`: what it was ranked by (never
    rises down the results); `matched`: which of the query's meaningful terms (the page's `terms`)
    this memory matched; `coverage`: their share, 0-1; `similarity`: its closeness in meaning to the
    query, 0-1 (None when the page was ranked by words alone). An older server sends none of them:
    `matched` is then empty and the others None."""

    memory: Memory
    score: float
    snippet: str
    matched: list[str] = []
    coverage: float | None = None
    similarity: float | None = None
    relevance: Literal["strong", "weak"] | None = None


class SimilarMemory(Model):
    """A memory a stored one may replace (`GET /memory/{id}/similar`): `relation` `repeat` (says the
    same) or `related` (the same subject, perhaps an older value of it), with the memory as it is now."""

    id: str
    key: str
    similarity: float
    relation: Literal["repeat", "related"] | None = None
    memory: Memory


class SimilarMemories(Model):
    """What a stored memory may replace, most similar first; `similar_unavailable`: the model failed
    (try again later), `similar` is then empty."""

    id: str
    similar: list[SimilarMemory] = []
    similar_unavailable: bool = False


LEFT_OUT = re.compile(
    r"(?P<count>\d+ more memor(?:y|ies)) left out; GET /memory/search finds (?P<it>it|them)\."
)


class RecallText(Model):
    """`GET /memory/recall`: the plain text an agent pulls into its context (`str()` gives it)."""

    text: str

    def __str__(self) -> str:
        return self.text

    def naming(self, way_on: str) -> str:
        """The text with its closing `… left out; GET /memory/search finds them.` naming the reader's own
        way to the rest instead (a model over MCP has the search tool, a shell user the command)."""
        head, _, last = self.text.rstrip("\n").rpartition("\n")
        found = LEFT_OUT.fullmatch(last)
        if found is None:
            return self.text
        return f"{head}\n{found['count']} left out; {way_on} finds {found['it']}.\n"


class LowPriority(Model):
    count: int
    keys: list[str]


class Recall(Model):
    """`GET /memory/recall?format=json`: the same selection and order as the text."""

    mind: dict[str, Any]
    total: int
    verified: int
    unverified: int
    memories: list[Memory]
    low_priority: LowPriority | None = None
    left_out: int = 0
    relevant: list[str] = []  # with `query`: the ids of the memories placed for it, in order


class ErrorBody(Model):
    code: str
    message: str
    details: list[dict[str, Any]] = []


class StoredSummary(Model):
    """What a batch result says of a stored memory (the sender has the content already)."""

    id: str
    category: str
    key: str
    version: int
    verified: bool = False
    created_at: str | None = None
    updated_at: str | None = None


class BatchResult(Model):
    index: int
    status: Literal["created", "replaced", "proposed", "error"]
    memory: StoredSummary | None = None
    error: ErrorBody | None = None
    proposal: dict[str, Any] | None = None


class BatchSummary(Model):
    created: int = 0
    replaced: int = 0
    proposed: int = 0
    failed: int = 0


class BatchAnswer(Model):
    results: list[BatchResult]
    summary: BatchSummary


class Hook(Model):
    """An inbound hook; `secret` only when just created or rotated."""

    id: str
    label: str | None = None
    url: str | None = None
    secret: str | None = None
    created_at: str | None = None


class Webhook(Model):
    """An outbound webhook subscription; `secret` only when just created."""

    id: str
    url: str
    events: list[str] = []
    enabled: bool = True
    secret: str | None = None
    created_at: str | None = None


class WebhookDelivery(Model):
    id: str | None = None
    state: str | None = None


class WebhookTest(Model):
    delivered: bool
    status_code: int | None = None
    error: str | None = None
    latency_ms: float | None = None


class Revision(Model):
    version: int
    memory: Memory
    change: str
    changed_at: str
    changed_by: dict[str, Any]


class Proposal(Model):
    id: str
    memory_id: str
    category: str
    key: str
    proposed: dict[str, Any]
    action: str = "update"  # or "delete": an agent's delete of a verified memory
    base_version: int | None = None
    status: str
    proposed_by: dict[str, Any] | None = None
    created_at: str
    decided_by: dict[str, Any] | None = None
    decided_at: str | None = None


class ProposalDecision(Model):
    """The answer to accepting or rejecting a proposal: it, and the memory as it now stands."""

    proposal: Proposal
    memory: Memory | None = None


class AuditEvent(Model):
    id: str
    action: str
    at: str
    by: dict[str, Any]
    target: dict[str, Any] = {}


class RestoreStatus(Model):
    """Where a restore stands (docs/backup.md): `running` (send the lines from `next_line`) or `done`."""

    status: Literal["running", "done"]
    next_line: int
    backup_id: str | None = None
    counts: dict[str, int] = {}
    source: dict[str, Any] = {}
    ids: str = "kept"


@dataclass(frozen=True)
class BackupPage:
    """One page of a backup: its lines (bytes, as sent) and the cursor of the next (None: the last)."""

    lines: bytes
    next_cursor: str | None


@dataclass
class Page[T]:
    """One page of a list; pass `next_cursor` back as `cursor` for the next (None: the last page)."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None


@dataclass
class SearchPage(Page[SearchHit]):
    """One page of search results, plus `terms`: the meaningful terms the query was read as (each
    hit's `matched` is a subset of them; empty from an older server)."""

    terms: list[str] = field(default_factory=list)
    mode: str | None = None  # how the page was ranked: hybrid, lexical or semantic (None: older server)
