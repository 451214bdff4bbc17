"""What an answer may show its caller: a credential without the `read` scope sees no memory's text.

A write-only or delete-only credential (a Mind Key, a connected app's OAuth grant, a hook) is refused
every read route; its writes, updates, deletes and proposals must not read for it either (issue 40).
So every door that answers such a caller passes its answer through `shown` before sending it: REST
(`POST /memory`, `PUT` and `DELETE /memory/{id}`, `POST /memory/batch`), hook deliveries and MCP's
tools. The rule is one list, `WITHHELD`, removed at any depth of the answer; what stays are ids,
keys, versions, dates and status (docs/auth.md#what-answers-show). A person (JWT) holds every scope.
"""

from __future__ import annotations

from synapse.auth.principal import Principal

READ = "read"

# Fields that carry a memory's text or point at other memories by what they say: never shown to a
# caller who may not read. `content` and `tags` wherever they appear (a memory, a proposal's
# `proposed`), `similar` (other memories the write resembles, and why it is missing), `snippet`.
WITHHELD = frozenset({"content", "tags", "similar", "similar_unavailable", "snippet"})

# A stored memory's fields a caller without `read` still sees: what it is and where it stands, never
# what it says. Every field of `memory.kinds.Memory` is in this set or in WITHHELD (a unit test holds
# that, so a new field is decided here before it ships).
SHOWN_MEMORY_FIELDS = frozenset(
    {
        "id",
        "mind_id",
        "category",
        "key",
        "priority",
        "source",
        "verified",
        "confidence",
        "expires_at",
        "expired",
        "created_at",
        "updated_at",
        "version",
        "verified_at",
        "verified_by",
        "pending_proposal",
        "occurred_at",
        "superseded_by",
        "superseded_at",
        "key_derived",
    }
)


def may_read(principal: Principal) -> bool:
    """Whether the caller may see what memories say: a person always, an agent with `read`."""
    return principal.is_user or READ in principal.scopes


def shown[T](principal: Principal, answer: T) -> T:
    """`answer` as `principal` may see it: unchanged for a reader, else without any WITHHELD field."""
    return answer if may_read(principal) else withheld(answer)


def withheld[T](answer: T) -> T:
    """`answer` (JSON: dicts, lists, scalars) with every WITHHELD field removed, at any depth."""
    if isinstance(answer, dict):
        kept = {name: withheld(value) for name, value in answer.items() if name not in WITHHELD}
        return kept  # type: ignore[return-value]
    if isinstance(answer, list):
        return [withheld(item) for item in answer]  # type: ignore[return-value]
    return answer
