"""How a client's write or patch becomes the stored memory: a new memory, a store-again by
(category, key), a partial update, a verification; versioning and the verification rule.

Apart from `model` (the request bodies) so that `memory.store`, which every memory handler
imports, does not load the body rules: these functions read a body's
fields through the `WriteFields`/`PatchFields` protocols.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from synapse.core import clock
from synapse.core.errors import Unprocessable
from synapse.core.ids import new_id
from synapse.memory.kinds import EDITABLE_FIELDS, Category, Memory, Priority, Source

DEFAULT_CONFIDENCE = {Source.USER: 1.0, Source.AGENT: 0.7}


class WriteFields(Protocol):
    """What `model.MemoryWrite` carries, validated."""

    @property
    def category(self) -> Category: ...
    @property
    def key(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def priority(self) -> Priority: ...
    @property
    def confidence(self) -> float | None: ...
    @property
    def expires_at(self) -> str | None: ...
    @property
    def key_derived(self) -> bool: ...
    @property
    def occurred_at(self) -> str | None: ...
    @property
    def supersedes(self) -> list[str]: ...


class PatchFields(Protocol):
    """What `model.MemoryPatch` carries: each field may be None, and which were sent."""

    @property
    def category(self) -> Category | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def sent(self) -> frozenset[str]: ...
    @property
    def supersedes(self) -> list[str]: ...


def vouched(source: Source, vouches: bool | None) -> bool:
    """Whether a write is verified by who wrote it: a person's is, unless they may not vouch (an
    editor: `vouches=False`); an agent's never is."""
    return source is Source.USER and vouches is not False


def voucher(by: Mapping[str, str]) -> str | None:
    """The person a write's `changed_by` names (None for an agent, or a caller that names nobody):
    who a write that is verified at write time is `verified_by`."""
    return (by.get("user_id") or None) if by.get("source") == Source.USER.value else None


def new_memory(
    mind_id: str,
    write: WriteFields,
    source: Source,
    at: datetime,
    vouches: bool | None = None,
    by: str | None = None,
) -> Memory:
    """A memory as first stored. A person's write is verified at write time, and says so as
    `verify` does: `verified_by` the person (`by`), `verified_at` the write."""
    stamp = clock.to_iso(at)
    stamped = vouched(source, vouches) and by is not None
    return Memory(
        id=new_id("mem_"),
        mind_id=mind_id,
        category=write.category.value,
        key=write.key,
        content=write.content,
        tags=list(write.tags),
        priority=write.priority.value,
        source=source.value,
        verified=vouched(source, vouches),
        confidence=write.confidence if write.confidence is not None else DEFAULT_CONFIDENCE[source],
        expires_at=write.expires_at,
        occurred_at=write.occurred_at,
        created_at=stamp,
        updated_at=stamp,
        version=1,
        verified_at=stamp if stamped else None,
        verified_by=by if stamped else None,
        key_derived=write.key_derived,
    )


def demotes(old: Memory, new: Memory) -> bool:
    """Whether `new` takes `old` down or out of recall: a lower priority, a lower confidence, or an
    expiry it did not have or an earlier one (so also one now or in the past). Raising priority or
    confidence, and removing or extending the expiry, do not."""
    if new.priority_rank > old.priority_rank or new.confidence < old.confidence:
        return True
    if new.expires_at is None:
        return False
    return old.expires_at is None or new.expires_at < old.expires_at  # both UTC ISO: text order is time


def protected_change(old: Memory, new: Memory) -> bool:
    """What an agent may not do to a verified memory without a person: change its content, tags or
    event time (when what a person vouched for happened), or demote it (`demotes`)."""
    changed = (new.content, new.tags, new.occurred_at) != (old.content, old.tags, old.occurred_at)
    return changed or demotes(old, new)


def makes_critical(old: Memory | None, new: Memory) -> bool:
    """Whether a write puts `new` at critical priority, where it was not (or did not exist)."""
    return new.priority == Priority.CRITICAL.value and (old is None or old.priority != new.priority)


def _after_change(
    old: Memory, new: Memory, source: Source, at: datetime, vouches: bool | None, by: str | None
) -> Memory:
    """Versioning and the verification rule shared by replace and update.

    A human vouched for the old memory, not the new one: an agent's change that a verified memory
    is protected from (`protected_change`) leaves it unverified when it is applied (a mind whose
    `agent_writes_to_verified` is `unverify`; otherwise it is a proposal and never applied). A user's
    write is verified by definition, unless they may not vouch (an editor): then it is an agent's.
    The person (`by`) vouches anew, so the stamp names them and this write; an agent's change that
    leaves it verified keeps the old stamp.
    """
    stamp = clock.to_iso(at)
    vouching = vouched(source, vouches)
    verified = vouching or (old.verified and not protected_change(old, new))
    verified_at: str | None
    verified_by: str | None
    if vouching and by is not None:
        verified_at, verified_by = stamp, by
    elif verified and old.verified:
        verified_at, verified_by = old.verified_at, old.verified_by
    else:
        verified_at = verified_by = None
    return new._replace(
        source=source.value,
        verified=verified,
        verified_at=verified_at,
        verified_by=verified_by,
        updated_at=stamp,
        version=old.version + 1,
    )


def replaced(
    old: Memory,
    write: WriteFields,
    source: Source,
    at: datetime,
    vouches: bool | None = None,
    by: str | None = None,
) -> Memory:
    """Store-again by (category, key): id and created_at stay, everything else follows the write. A
    key once derived stays known as derived (it is the same key, whoever sends it again)."""
    fresh = new_memory(old.mind_id, write, source, at, vouches)._replace(
        id=old.id, created_at=old.created_at, key_derived=old.key_derived or write.key_derived
    )
    return _after_change(old, fresh, source, at, vouches, by)


def patched(
    old: Memory,
    patch: PatchFields,
    source: Source,
    at: datetime,
    vouches: bool | None = None,
    by: str | None = None,
) -> Memory:
    for field in ("category", "key"):
        sent = getattr(patch, field)
        if sent is not None and sent != getattr(old, field):
            raise Unprocessable(
                f"{field}: is immutable; store a new memory instead",
                details=[
                    {"field": field, "rule": "immutable", "message": "cannot be changed after creation"}
                ],
            )
    sent = patch.sent
    changes: dict[str, Any] = {}
    for field in EDITABLE_FIELDS:
        if field not in sent:
            continue
        value = getattr(patch, field)  # None only for expires_at, occurred_at: the body refuses other nulls
        changes[field] = value.value if isinstance(value, StrEnum) else value
    return _after_change(old, old._replace(**changes), source, at, vouches, by)


def verified(old: Memory, by: str, at: datetime) -> Memory:
    stamp = clock.to_iso(at)
    return old._replace(
        verified=True, verified_at=stamp, verified_by=by, updated_at=stamp, version=old.version + 1
    )


def superseded(old: Memory, by_id: str, at: datetime, keeps_verified: bool = True) -> Memory:
    """`old` replaced by memory `by_id` as its next version: kept, marked, out of the reads by
    default. An agent's mark applied over what a person verified (a mind whose
    `agent_writes_to_verified` is `unverify`) leaves it unverified (`keeps_verified=False`)."""
    stamp = clock.to_iso(at)
    kept = keeps_verified or not old.verified
    return old._replace(
        superseded_by=by_id,
        superseded_at=stamp,
        verified=old.verified and kept,
        verified_at=old.verified_at if kept else None,
        verified_by=old.verified_by if kept else None,
        updated_at=stamp,
        version=old.version + 1,
    )


def revived(old: Memory) -> Memory:
    """`old` current again: no longer marked as replaced (a person's restore)."""
    return old._replace(superseded_by=None, superseded_at=None)
