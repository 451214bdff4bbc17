"""Restore: a memory takes an earlier revision's content, tags, priority, confidence and expiry as
a new version (`change: restored`), verified by the person restoring.

A deleted memory comes back with its id, created_at, category and key, at the version after its
`deleted` revision, unless another memory has taken its (category, key) meanwhile (409). Its
revisions lose the 30-day clock the deletion gave them (`history`), as they are the live memory's
newest again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from synapse.core import clock
from synapse.core.errors import Conflict
from synapse.core.validation import Body, Rule, accepts
from synapse.memory import history, writes
from synapse.memory.changes import revived, verified
from synapse.memory.kinds import EDITABLE_FIELDS, Memory, Source


class RestoreRequest(Body):
    """The body of `POST /memory/{id}/restore`: which revision to bring back."""

    version: int = accepts(Rule("integer", minimum=1))


def restored(base: Memory, earlier: Memory, user_id: str, at: datetime) -> Memory:
    """`base` with `earlier`'s text and settings, vouched for by `user_id` as its next version, and
    current again: a restore revives a replaced memory (it leaves `superseded_by`)."""
    taken = revived(base)._replace(
        **{name: getattr(earlier, name) for name in EDITABLE_FIELDS}, source=Source.USER.value
    )
    return verified(taken, user_id, at)


def _version_of(item: dict[str, Any]) -> int:
    return int(str(item["sk"]).rsplit("#", 1)[1])


def _bring_back(chosen: history.Revision, user_id: str, changed_by: writes.ChangedBy, at: datetime) -> Memory:
    mind_id, memory_id = chosen.memory.mind_id, chosen.memory.id
    recent = history.newest(mind_id, memory_id, history.KEEP_NEWEST)
    last = next((history.revision_from_item(item) for item in recent if "memory" in item), None)
    if last is None or last.change != history.Change.DELETED:
        raise writes.Retry  # restored (or written) by someone else a moment ago: read again
    gone = last.memory
    if writes.read_by_key(mind_id, gone.category, gone.key) is not None:
        raise Conflict(
            f"Another memory now holds ({gone.category}, {gone.key}); delete it first to restore this one."
        )
    memory = restored(gone._replace(version=last.version, pending_proposal=None), chosen.memory, user_id, at)
    again_newest = [_version_of(item) for item in recent[: history.KEEP_NEWEST - 1] if "ttl" in item]
    ops = [
        *history.revision_ops(memory, history.Change.RESTORED, changed_by, at),
        *history.untimed_ops(mind_id, memory_id, again_newest),
        *writes.create_ops(memory),
    ]
    writes.commit(ops, mind_op_index=len(ops) - 1)
    return memory


def restore(mind_id: str, memory_id: str, version: int, user_id: str, changed_by: writes.ChangedBy) -> Memory:
    """The memory as revision `version` had it, as a new version (404 if that revision is gone)."""

    def attempt() -> Memory:
        at = clock.now()
        chosen = history.revision(mind_id, memory_id, version)
        live = writes.find_by_id(mind_id, memory_id)
        if live is None:
            return _bring_back(chosen, user_id, changed_by, at)
        memory = restored(live, chosen.memory, user_id, at)
        writes.commit(
            writes.replace_ops(live, memory)
            + history.revision_ops(memory, history.Change.RESTORED, changed_by, at)
        )
        return memory

    return writes.retrying(attempt)
