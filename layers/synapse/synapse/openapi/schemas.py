"""The JSON the API answers, as pydantic models that only describe it (`synapse.openapi.document`):
the domain objects' `public()` dicts. Extra fields allowed; a field without a default is always sent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from synapse.openapi.replacing import SimilarMemory, SupersedeOutcome


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorInfo(_Answer):
    code: str = Field(description="Stable machine-readable code, e.g. validation_error, not_found.")
    message: str = Field(description="What went wrong, written for a person.")
    details: list[dict[str, Any]] = Field(
        description='For a 422: [{"field", "rule", "message"}]; for a 405: [{"allowed": [...]}].'
    )


class Error(_Answer):
    """SPEC's error envelope: every 4xx and 5xx answer."""

    error: ErrorInfo
    request_id: str


# ---------------------------------------------------------------- memories


class Memory(_Answer):
    id: str
    mind_id: str
    category: str
    key: str
    content: str
    tags: list[str]
    priority: str
    source: Literal["user", "agent"]
    verified: bool
    confidence: float
    expires_at: str | None
    created_at: str
    updated_at: str
    version: int
    verified_at: str | None
    verified_by: str | None
    pending_proposal: str | None = Field(description="The id of an agent's change waiting for review.")
    occurred_at: str | None = Field(default=None, description="When it happened: YYYY-MM-DD or a timestamp.")
    superseded_by: str | None = Field(default=None, description="The memory that replaced it.")
    superseded_at: str | None = Field(default=None, description="When it was replaced.")
    key_derived: bool = Field(default=False, description="The server derived the key from the content.")
    expired: bool


_WITHOUT_READ = "Absent to a credential without the `read` scope (docs/auth.md#what-answers-show)."


class WrittenMemory(Memory):
    """A write's answer: the memory; to a credential without `read`, without what it says (`content`,
    `tags`)."""

    content: str | None = Field(default=None, description=_WITHOUT_READ)  # type: ignore[assignment]
    tags: list[str] | None = Field(default=None, description=_WITHOUT_READ)  # type: ignore[assignment]


class StoredMemory(WrittenMemory):
    """`POST /memory`'s answer: the memory, and the others it repeats."""

    similar: list[SimilarMemory] | None = Field(
        default=None,
        description="Other memories of the mind this one may replace (at most 3, most similar first): "
        "`repeat` ones say the same (update one of them instead of keeping two versions), `related` "
        "ones may be an older value (name them in `supersedes`). Absent when none, and to a credential "
        "without `read`.",
    )
    supersedes: list[SupersedeOutcome] | None = Field(
        default=None, description="What became of each memory the write named in `supersedes`."
    )
    similar_unavailable: bool | None = Field(
        default=None, description="true when `similar` could not be found (the model failed): stored anyway."
    )


class MemoryPage(_Answer):
    memories: list[Memory]
    next_cursor: str | None


# ---------------------------------------------------------------- history and proposals


class ChangedBy(_Answer):
    source: Literal["user", "agent"]
    user_id: str | None = Field(default=None, description="A person's change.")
    key_id: str | None = Field(default=None, description="An agent's change with a Mind Key.")
    hook_id: str | None = Field(default=None, description="An agent's change through a hook.")
    grant_id: str | None = Field(
        default=None, description="An agent's change through a connected app (OAuth)."
    )


class Revision(_Answer):
    version: int
    memory: Memory = Field(description="The whole memory as it was after the change.")
    change: Literal[
        "created", "updated", "replaced", "verified", "restored", "deleted", "proposal_accepted", "superseded"
    ]
    changed_at: str
    changed_by: ChangedBy
    claimed: dict[str, Any] | None = Field(
        default=None,
        description="What a restored backup said of who verified (verified_by, verified_at) or made "
        "this change (changed_by) that its restore could not stand behind: the backup was not "
        "signed by this deployment (docs/backup.md). Absent otherwise.",
    )


class RevisionPage(_Answer):
    revisions: list[Revision]
    next_cursor: str | None


class ProposedFields(_Answer):
    content: str | None = Field(default=None, description=_WITHOUT_READ)
    tags: list[str] | None = Field(default=None, description=_WITHOUT_READ)
    priority: str
    confidence: float
    expires_at: str | None
    occurred_at: str | None = None


class Proposal(_Answer):
    id: str
    memory_id: str
    category: str
    key: str
    action: Literal["update", "delete", "supersede"] = Field(
        description="What accepting does: apply `proposed` (update), delete the memory (delete), or "
        "mark it replaced by `superseded_by` (supersede)."
    )
    proposed: ProposedFields
    base_version: int
    status: Literal["pending", "accepted", "rejected", "superseded"]
    proposed_by: ChangedBy
    created_at: str
    decided_by: ChangedBy | None
    decided_at: str | None
    superseded_by: str | None = Field(
        default=None, description="For action supersede: the memory that would replace this one."
    )


class ProposalPage(_Answer):
    proposals: list[Proposal]
    next_cursor: str | None


class Proposed(_Answer):
    """An agent's change to a verified memory, held for review (202), or a proposal just decided."""

    proposal: Proposal
    memory: WrittenMemory | None = Field(
        description="The memory as it is now (null if deleted); without `content` and `tags` to a "
        "credential without `read`."
    )


class SearchResult(_Answer):
    memory: Memory
    score: float = Field(description="What it was ranked by (docs/search.md): never rises down the results.")
    snippet: str = Field(description="Where it matched, hits marked **like this**.")
    matched: list[str] = Field(description="The query's terms (as in `terms`) this memory matched.")
    coverage: float = Field(
        ge=0,
        le=1,
        description=(
            "The share of the query's terms matched, a term in over 10 % of the memories weighing"
            " less: 1.0 covers the whole question; low means a weak match."
        ),
    )
    similarity: float | None = Field(
        description="Closeness in meaning to the query (cosine, about 0-1); null when ranked by words alone."
    )
    relevance: Literal["strong", "weak"] = Field(description="strong: an answer; weak: related at best.")


class SearchPage(_Answer):
    results: list[SearchResult] = Field(
        description="Words and meaning fused into one ranking (docs/search.md), best first; walking the "
        "pages with next_cursor returns each hit once, in the same order whatever the limit; of two "
        "near-duplicates the newer first."
    )
    terms: list[str] = Field(description="The query's meaningful terms (function words dropped).")
    mode: Literal["hybrid", "lexical", "semantic"] = Field(
        description="How the page was ranked: explicit syntax, a language the model does not serve, or "
        "an index without vectors yet give lexical."
    )
    next_cursor: str | None


class RecallMind(_Answer):
    id: str
    name: str


class LowPriority(_Answer):
    count: int
    keys: list[str]


class RecallJson(_Answer):
    """`GET /memory/recall?format=json`: the text's selection and order."""

    mind: RecallMind
    total: int
    verified: int
    unverified: int
    memories: list[Memory]
    low_priority: LowPriority | None
    left_out: int
    relevant: list[str] = Field(
        description="With q: the ids of the memories shown for it, right after the critical ones; [] without."
    )


MEMORY_WRITE = "#/components/schemas/MemoryWrite"


class MemoryBatch(BaseModel):
    """The body of `POST /memory/batch` (and a batch hook delivery): 1 to 100 memories, each a
    `POST /memory` body. Each item is validated on its own: a bad one is that item's error."""

    model_config = ConfigDict(extra="forbid")

    # Each item is a MemoryWrite, whose schema comes from its rules (`core.validation`), not pydantic.
    memories: list[dict[str, Any]] = Field(
        min_length=1, max_length=100, json_schema_extra={"items": {"$ref": MEMORY_WRITE}}
    )


class StoredSummary(_Answer):
    id: str
    category: str
    key: str
    version: int
    verified: bool
    created_at: str
    updated_at: str
    occurred_at: str | None = Field(default=None, description="As stored: a date, or a UTC timestamp.")


class ItemError(_Answer):
    code: str
    message: str
    details: list[dict[str, Any]]


class BatchResult(_Answer):
    index: int
    status: Literal["created", "replaced", "proposed", "error"]
    memory: StoredSummary | None = Field(default=None, description="Unless the item failed.")
    error: ItemError | None = Field(default=None, description="When the item failed.")
    proposal: dict[str, Any] | None = Field(
        default=None, description="When proposed: the change waiting for a person's review."
    )
    similar: list[SimilarMemory] | None = Field(
        default=None,
        description="Other memories it may replace, as POST /memory names them (never without `read`).",
    )
    supersedes: list[SupersedeOutcome] | None = Field(
        default=None, description="What became of each memory the item named in `supersedes`."
    )
    similar_unavailable: bool | None = Field(
        default=None, description="true when `similar` could not be looked up, as POST /memory says it."
    )


class BatchSummary(_Answer):
    created: int
    replaced: int
    proposed: int
    failed: int


class BatchAnswer(_Answer):
    """One result per item, in order, and the counts."""

    results: list[BatchResult]
    summary: BatchSummary


# ---------------------------------------------------------------- minds and keys


class MindSettings(_Answer):
    agent_writes_to_verified: Literal["propose", "unverify"]
    history_retention_days: int
    agent_writes_critical: Literal["allow", "propose", "deny"]


class Mind(_Answer):
    id: str
    name: str
    created_at: str
    updated_at: str
    memory_count: int
    settings: MindSettings


class MindPage(_Answer):
    minds: list[Mind]
    next_cursor: str | None


class NewKey(_Answer):
    """A Mind Key as created: `key` is shown in plain text this once."""

    id: str
    key: str
    label: str
    scopes: list[Literal["read", "write", "delete"]]
    created_at: str


class Key(_Answer):
    id: str
    label: str
    prefix: str
    scopes: list[Literal["read", "write", "delete"]]
    created_at: str
    last_used_at: str | None


class KeyPage(_Answer):
    keys: list[Key]
    next_cursor: str | None


class NewMind(_Answer):
    mind: Mind
    mind_key: NewKey


class OpenApiDocument(_Answer):
    openapi: str


# ---------------------------------------------------------------- audit


class AuditEvent(_Answer):
    id: str
    action: str
    at: str
    by: dict[str, Any] = Field(description='Who: {"source": "user", "user_id"} or {"source": "agent", …}.')
    target: dict[str, Any]


class AuditPage(_Answer):
    events: list[AuditEvent]
    next_cursor: str | None
