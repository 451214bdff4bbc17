"""How a client's write or patch becomes the stored memory: a new memory, a store-again by
(category, key), a partial update, a verification; versioning and the verification rule.

Apart from `model` (the request bodies) so that `memory.store`, which every memory handler
imports, does not load the body rules: these functions read a body's
fields through the `WriteFields`/`PatchFields` protocols.
"""

from __future__ import annotations

from dataclasses import replace
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


class PatchFields(Protocol):
    """What `model.MemoryPatch` carries: each field may be None, and which were sent."""

    @property
    def category(self) -> Category | None: ...
    @property
    def key(self) -> str | None: ...
    @property
    def sent(self) -> frozenset[str]: ...


def new_memory(mind_id: str, write: WriteFields, source: Source, at: datetime) -> Memory:
    stamp = clock.to_iso(at)
    return Memory(
        id=new_id("mem_"),
        mind_id=mind_id,
        category=write.category.value,
        key=write.key,
        content=write.content,
        tags=list(write.tags),
        priority=write.priority.value,
        source=source.value,
        verified=source is Source.USER,
        confidence=write.confidence if write.confidence is not None else DEFAULT_CONFIDENCE[source],
        expires_at=write.expires_at,
        created_at=stamp,
        updated_at=stamp,
        version=1,
    )


def _after_change(old: Memory, new: Memory, source: Source, at: datetime) -> Memory:
    """Versioning and the verification rule shared by replace and update.

    A human vouched for the old text, not the new one: an agent that changes the content or
    tags of a verified memory leaves it unverified. A user's write is verified by definition.
    """
    if source is Source.USER:
        verified = True
    else:
        verified = old.verified and (new.content, new.tags) == (old.content, old.tags)
    keep_stamp = verified and old.verified
    return replace(
        new,
        source=source.value,
        verified=verified,
        verified_at=old.verified_at if keep_stamp else None,
        verified_by=old.verified_by if keep_stamp else None,
        updated_at=clock.to_iso(at),
        version=old.version + 1,
    )


def replaced(old: Memory, write: WriteFields, source: Source, at: datetime) -> Memory:
    """Store-again by (category, key): id and created_at stay, everything else follows the write."""
    fresh = new_memory(old.mind_id, write, source, at)
    return _after_change(old, replace(fresh, id=old.id, created_at=old.created_at), source, at)


def patched(old: Memory, patch: PatchFields, source: Source, at: datetime) -> Memory:
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
        value = getattr(patch, field)  # None only for expires_at: the body refuses any other null
        changes[field] = value.value if isinstance(value, StrEnum) else value
    return _after_change(old, replace(old, **changes), source, at)


def verified(old: Memory, by: str, at: datetime) -> Memory:
    stamp = clock.to_iso(at)
    return replace(
        old, verified=True, verified_at=stamp, verified_by=by, updated_at=stamp, version=old.version + 1
    )
