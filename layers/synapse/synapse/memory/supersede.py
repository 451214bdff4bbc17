"""Facts that replace facts: what a write's `supersedes` does to the memories it names.

Each named memory is kept and marked (`superseded_by` the writing memory, `superseded_at`) as its
next version, with a `superseded` revision, in the same transaction as the write itself: the new
memory and every mark land together or not at all. A marked memory leaves recall, by-tag, search,
the list and the expiring read (`items.memory_item` drops its recall keys, `counts` stop counting
it), stays readable by id and in its history, and a person's restore revives it (`restore`).

An agent's mark over what a person verified follows the mind's `agent_writes_to_verified`:
`propose` (the default) makes that mark a proposal (action `supersede`), `unverify` applies it and
the memory is no longer verified. A person's mark applies.

Refused with a 422 naming `supersedes[i]`, before anything is written: an id that is not a memory
of this mind (another mind's included: its memories are unknown here), the writing memory itself,
and a cycle (the named memory already replaces the writing one, directly or along a chain).
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from synapse.core.errors import field_error
from synapse.memory import history, proposals, writes
from synapse.memory.changes import superseded
from synapse.memory.kinds import Memory, Source
from synapse.minds import minds

CHAIN_MAX = 50  # how far a cycle check follows `superseded_by` (a longer chain is refused too)


class Marks(NamedTuple):
    """The operations that mark the named memories, and what became of each
    (`{"id", "status": "superseded" | "proposed", "proposal_id"?}`) for the write's answer."""

    ops: list[dict[str, Any]]
    outcomes: tuple[dict[str, Any], ...]


NONE = Marks([], ())


def _field(position: int) -> str:
    return f"supersedes[{position}]"


def _replaces_writer(writer: Memory, target_id: str) -> bool:
    """Whether `target_id` already replaces `writer`, directly or along a chain of replacements:
    marking it replaced by `writer` would close a cycle."""
    current: Memory | None = writer
    for _ in range(CHAIN_MAX):
        if current is None or current.superseded_by is None:
            return False
        if current.superseded_by == target_id:
            return True
        current = writes.find_by_id(writer.mind_id, current.superseded_by)
    return True


def targets(writer: Memory, ids: Sequence[str]) -> list[Memory]:
    """The memories `ids` names, each checked; a 422 naming the first that may not be replaced."""
    found = []
    for position, memory_id in enumerate(ids):
        if memory_id == writer.id:
            raise field_error(_field(position), "self", "a memory cannot supersede itself")
        target = writes.find_by_id(writer.mind_id, memory_id)
        if target is None:
            raise field_error(_field(position), "unknown", f"no memory {memory_id[:80]!r} in this mind")
        if _replaces_writer(writer, memory_id):
            raise field_error(
                _field(position),
                "cycle",
                f"{memory_id} already replaces this memory (directly or through others): "
                "it cannot be replaced by it",
            )
        found.append(target)
    return found


def plan(writer: Memory, ids: Sequence[str], reviewed: Source, by: writes.ChangedBy, at: datetime) -> Marks:
    """The marks of `ids` by `writer` (the memory as the write stores it), as operations to commit
    with the write. `reviewed`: whose rules the write follows over verified memories."""
    if not ids:
        return NONE
    ops: list[dict[str, Any]] = []
    outcomes: list[dict[str, Any]] = []
    for target in targets(writer, ids):
        if target.superseded_by == writer.id and target.pending_proposal is None:
            outcomes.append({"id": target.id, "status": "superseded"})  # already: nothing to write
            continue
        if reviewed is Source.AGENT and target.verified:
            if minds.settings_of(writer.mind_id).agent_writes_to_verified == "propose":
                proposed, proposal, _ = proposals.propose_ops(
                    target, target, by, at, proposals.Action.SUPERSEDE, superseded_by=writer.id
                )
                ops += proposed
                outcomes.append({"id": target.id, "status": "proposed", "proposal_id": proposal["id"]})
                continue
            marked = superseded(target, writer.id, at, keeps_verified=False)
        else:
            marked = superseded(target, writer.id, at)
        ops += writes.replace_ops(target, marked)
        ops += history.revision_ops(marked, history.Change.SUPERSEDED, by, at)
        outcomes.append({"id": target.id, "status": "superseded"})
    return Marks(ops, tuple(outcomes))


def check_size(ops: Sequence[dict[str, Any]]) -> None:
    """One transaction takes at most `writes.MAX_ACTIONS` actions: a write whose marks would pass
    that (many named memories with many tags) is refused whole rather than split."""
    if len(ops) > writes.MAX_ACTIONS:
        raise field_error(
            "supersedes",
            "transaction_size",
            f"too many memories (with their tags) to replace in one write: the write and its marks "
            f"need {len(ops)} actions, at most {writes.MAX_ACTIONS}; name fewer",
        )
