"""Memories in DynamoDB: idempotent store-by-key, id lookup, conditional update, verify, delete
(the reads that list memories are `reads`; a deleted mind's purge is `purge`).

Every write is one transaction (see `writes`) over the memory item, its id pointer, its tag copies,
its counters and its revision (`history`), conditioned on what it read; a lost race re-reads and
tries again. An agent's write or delete that would change, demote or remove what a person verified
becomes a proposal instead, and so may an agent's write of critical priority (`proposals.review`):
`Stored.proposal` says so, and the memory is returned as it stays.
"""

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from botocore.exceptions import ClientError

from synapse.core import clock
from synapse.core.errors import PreconditionFailed
from synapse.memory import changes, history, proposals, repeats, supersede, writes
from synapse.memory.changes import PatchFields, WriteFields, new_memory, patched, replaced, verified
from synapse.memory.history import Change
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory, Source
from synapse.memory.writes import ChangedBy
from synapse.storage import batch_reads, tables


def get_memory(mind_id: str, memory_id: str) -> Memory:
    return writes.read_by_id(mind_id, memory_id)


# ---------------------------------------------------------------- writes


class Stored(NamedTuple):
    """What a write left: the memory (as it stays, when the write became a proposal), whether it
    was created, and the proposal (JSON) that the write, or part of it, became."""

    memory: Memory
    created: bool
    proposal: dict[str, Any] | None = None
    # Other memories of the mind that say nearly the same ({id, key, similarity}): `memory.repeats`.
    similar: tuple[dict[str, Any], ...] = ()
    # What became of each memory the write named in `supersedes` (`memory.supersede.Marks`).
    supersedes: tuple[dict[str, Any], ...] = ()
    similar_unavailable: bool = False  # `similar` could not be looked up (the model failed)


def _proposing(
    memory: Memory, proposed: Memory | None, by: ChangedBy, at: datetime
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, Memory]:
    """`memory`, about to be stored, with the proposal of the rest of a write that waits for review
    (its operations, its JSON, the memory marked with it; a newer proposal supersedes a pending one),
    or as it is when nothing waits."""
    if proposed is None:
        return [], None, memory
    return proposals.proposal_ops(memory, proposed, by, at)


class _Plan(NamedTuple):
    """One write ready to commit: its transaction operations, where the mind's count is among them
    (`writes.commit`), and what it leaves once committed."""

    ops: list[dict[str, Any]]
    mind_op_index: int | None
    stored: Stored
    applied: bool = True  # False: the whole write became a proposal


def _with_marks(plan: _Plan, ids: Sequence[str], reviewed: Source, by: ChangedBy, at: datetime) -> _Plan:
    """`plan` with the marks of the memories its write replaces (`supersede`), in its transaction.
    A write that wholly became a proposal marks nothing: what it would say is not stored yet."""
    if not ids or not plan.applied:
        return plan
    marks = supersede.plan(plan.stored.memory, ids, reviewed, by, at)
    index = None if plan.mind_op_index is None else plan.mind_op_index + len(marks.ops)
    ops, index = writes.summed(marks.ops + plan.ops, index)
    supersede.check_size(ops)
    return _Plan(ops, index, plan.stored._replace(supersedes=marks.outcomes))


def _committed(plan: _Plan) -> Stored:
    writes.commit(plan.ops, plan.mind_op_index)
    return plan.stored


def _create(candidate: Memory, source: Source, by: ChangedBy, at: datetime) -> _Plan:
    """A new memory with its revision; an agent's at critical may be created at high with a
    proposal of critical, or refused (`proposals.review`)."""
    applied, proposed = proposals.review(None, candidate, source)
    assert applied is not None  # nothing of a new memory is protected: only its priority may wait
    proposal_ops, proposal, memory = _proposing(applied, proposed, by, at)
    ops = [*history.revision_ops(memory, Change.CREATED, by, at), *proposal_ops, *writes.create_ops(memory)]
    return _Plan(ops, len(ops) - 1, Stored(memory, created=True, proposal=proposal))


def _change(
    current: Memory, candidate: Memory, source: Source, by: ChangedBy, at: datetime, change: Change
) -> _Plan:
    """Apply `candidate` over `current` with its revision, or propose it, or apply part of it and
    propose the rest (see `proposals.review`)."""
    applied, proposed = proposals.review(current, candidate, source)
    if applied is None:
        assert proposed is not None
        ops, whole, marked = proposals.propose_ops(current, proposed, by, at)
        return _Plan(ops, None, Stored(marked, created=False, proposal=whole), applied=False)
    # A change applied beside a pending proposal keeps it pending (its accept then sees the new version)
    kept = applied._replace(pending_proposal=current.pending_proposal)
    proposal_ops, proposal, memory = _proposing(kept, proposed, by, at)
    ops = writes.replace_ops(current, memory) + history.revision_ops(memory, change, by, at) + proposal_ops
    return _Plan(ops, None, Stored(memory, created=False, proposal=proposal))


class Request(NamedTuple):
    """One memory to store as `store` stores it: for `store_many`."""

    mind_id: str
    write: WriteFields
    source: Source
    changed_by: ChangedBy | None = None
    vouches: bool | None = None  # False: a person who may not vouch (an editor), reviewed as an agent

    def by(self) -> ChangedBy:
        return self.changed_by or writes.default_changed_by(self.source.value)

    def sk(self) -> tuple[str, str]:
        return self.mind_id, tables.memory_sk(self.write.category.value, self.write.key)


def _stored_over(request: Request, current: Memory | None, moment: datetime) -> _Plan:
    """The plan of storing `request` over `current`, the memory its (category, key) holds now."""
    reviewed = reviewed_as(request.source, request.vouches)
    person = changes.voucher(request.by())
    ids = request.write.supersedes
    if current is None:
        new = new_memory(request.mind_id, request.write, request.source, moment, request.vouches, person)
        return _with_marks(_create(new, reviewed, request.by(), moment), ids, reviewed, request.by(), moment)
    candidate = replaced(current, request.write, request.source, moment, request.vouches, person)
    plan = _change(current, candidate, reviewed, request.by(), moment, Change.REPLACED)
    return _with_marks(plan, ids, reviewed, request.by(), moment)


def reviewed_as(source: Source, vouches: bool | None) -> Source:
    """Whose rules a write follows over what a person verified (`proposals.review`): an editor's
    (a person who may not vouch) follows an agent's, so only a reviewer changes a vouched-for fact."""
    return Source.AGENT if vouches is False else source


def store(
    mind_id: str,
    write: WriteFields,
    source: Source,
    at: datetime | None = None,
    changed_by: ChangedBy | None = None,
    vouches: bool | None = None,
    similar: repeats.FindSimilar | None = None,
) -> Stored:
    """Create, or replace by (category, key). Never creates a duplicate, whatever the race.

    The one per-item apply of POST /memory, and of a batch's item whose shared write failed
    (`store_many`). With `similar`, the answer names the memories the write repeats: its text is
    embedded while the write's read and transaction run, as a batch's are."""
    request = Request(mind_id, write, source, changed_by, vouches)

    def attempt(read: bool = True) -> Stored:
        current = writes.read_by_key(mind_id, write.category.value, write.key) if read else None
        return _committed(_stored_over(request, current, at or clock.now()))

    embedded = repeats.started_ahead(similar, mind_id, [write])
    outcome = (_created_unread(attempt) if write.key_derived else None) or writes.retrying(attempt)
    embedded()
    stored: Stored = repeats.with_similar(mind_id, [outcome], similar)[0]
    return stored


def _created_unread(attempt: Callable[[bool], Stored]) -> Stored | None:
    """A write whose key Synapse derived from its content, created without reading first: the key
    ends in a digest of the text, so it is taken only when the same text comes again (a retry). The
    create's condition (the key free) makes that safe; then None, and the write reads and replaces
    as any other. Saves a content-only write (MCP `remember`'s usual call) one read of its round trips."""
    try:
        return attempt(False)
    except writes.Retry:
        return None


Outcome = Stored | Exception
"""What one request of `store_many` came to: what it stored, or why not (as `store` raised it)."""


def _alone(request: Request) -> Outcome:
    try:
        by, vouches = request.changed_by, request.vouches
        return store(request.mind_id, request.write, request.source, changed_by=by, vouches=vouches)
    except Exception as error:  # the caller reports it as that item's error, as it would from `store`
        return error


def _rounds(requests: Sequence[Request]) -> list[list[int]]:
    """The requests' indexes by how often their (category, key) came before: a key sent twice is
    stored the second time over the first (replaced), as when stored one after the other."""
    seen: Counter[tuple[str, str]] = Counter()
    rounds: list[list[int]] = []
    for index, request in enumerate(requests):
        occurrence = seen[request.sk()]
        seen[request.sk()] += 1
        if occurrence == len(rounds):
            rounds.append([])
        rounds[occurrence].append(index)
    return rounds


def _store_round(requests: Sequence[Request], indexes: list[int], outcomes: dict[int, Outcome]) -> None:
    """Requests with distinct keys: one consistent BatchGetItem, then their writes packed into as
    few transactions as fit (`writes.groups`). A transaction that fails applied nothing (a lost
    race, a gone mind, a refused condition): its requests are then stored one by one, exactly as
    `store` would, so each gets its own answer."""
    items = batch_reads.batch_get(tables.memories_table(), [requests[i].sk() for i in indexes])
    plans: dict[int, _Plan] = {}
    for index in indexes:
        found = items.get(requests[index].sk())
        try:
            current = memory_from_item(found) if found else None
            plans[index] = _stored_over(requests[index], current, clock.now())
        except Exception as error:  # refused on review (e.g. an agent's critical): that item's answer
            outcomes[index] = error
    for group in writes.groups([(index, plan.ops) for index, plan in plans.items()]):
        try:
            writes.commit(group.ops)
        except (writes.Retry, ClientError):  # nothing applied: each on its own, with its own retries
            outcomes.update((index, _alone(requests[index])) for index in group.members)
        except Exception as error:  # e.g. Contention (outcome unknown): what `store` would have raised
            outcomes.update((index, error) for index in group.members)
        else:
            outcomes.update((index, plans[index].stored) for index in group.members)


def store_many(requests: Sequence[Request], similar: repeats.FindSimilar | None = None) -> list[Outcome]:
    """Each request stored as `store` stores it, answered in order, with far fewer round trips: one
    read for all and a few shared transactions instead of a read and a transaction each (issue 23).

    The same rules hold as for `store` one after the other: a key sent twice is created then
    replaced; revisions, proposals and counters are those of each write (counters summed per
    transaction); a failed shared transaction falls back to `store` per item."""
    minds = {r.mind_id for r in requests}
    waits = [repeats.started_ahead(similar, m, [r.write for r in requests if r.mind_id == m]) for m in minds]
    outcomes: dict[int, Outcome] = {}
    for indexes in _rounds(requests):
        _store_round(requests, indexes, outcomes)
    ordered = [outcomes[index] for index in range(len(requests))]
    for wait in waits:
        wait()
    if similar is None:
        return ordered
    for mind_id in minds:
        ours = [at for at, r in enumerate(requests) if r.mind_id == mind_id]
        noted = repeats.with_similar(mind_id, [ordered[at] for at in ours], similar)
        for at, outcome in zip(ours, noted, strict=True):
            ordered[at] = outcome
    return ordered


def update(
    mind_id: str,
    memory_id: str,
    patch: PatchFields,
    source: Source,
    if_match: int | None = None,
    changed_by: ChangedBy | None = None,
    vouches: bool | None = None,
) -> Stored:
    by = changed_by or writes.default_changed_by(source.value)

    def attempt() -> Stored:
        current = writes.read_by_id(mind_id, memory_id)
        if if_match is not None and current.version != if_match:
            raise PreconditionFailed(
                f"If-Match: version {if_match} is stale; the memory is at version {current.version}."
            )
        moment = clock.now()
        candidate = patched(current, patch, source, moment, vouches, changes.voucher(by))
        reviewed = reviewed_as(source, vouches)
        plan = _change(current, candidate, reviewed, by, moment, Change.UPDATED)
        return _committed(_with_marks(plan, patch.supersedes, reviewed, by, moment))

    return writes.retrying(attempt)


def verify(mind_id: str, memory_id: str, user_id: str, changed_by: ChangedBy | None = None) -> Memory:
    by = changed_by or {"source": Source.USER.value, "user_id": user_id}

    def attempt() -> Memory:
        current = writes.read_by_id(mind_id, memory_id)
        moment = clock.now()
        memory = verified(current, user_id, moment)
        writes.commit(
            writes.replace_ops(current, memory) + history.revision_ops(memory, Change.VERIFIED, by, moment)
        )
        return memory

    return writes.retrying(attempt)


def delete(
    mind_id: str,
    memory_id: str,
    changed_by: ChangedBy | None = None,
    source: Source = Source.USER,
    vouches: bool | None = None,
) -> Stored | None:
    """Delete for good; its history stays 30 days (`history.deleted_ops`), so it can be restored.

    An agent's delete of a verified memory is a proposal instead (`proposals.delete_wanted`): then
    the answer is the memory as it stays, marked, with the proposal; otherwise None."""
    by = changed_by or writes.default_changed_by(source.value)

    def attempt() -> Stored | None:
        current = writes.read_by_id(mind_id, memory_id)
        at = clock.now()
        if proposals.delete_wanted(current, reviewed_as(source, vouches)):
            proposed, proposal, marked = proposals.propose_ops(
                current, current, by, at, proposals.Action.DELETE
            )
            writes.commit(proposed)
            return Stored(marked, created=False, proposal=proposal)
        ops = [
            *history.deleted_ops(current, by, at),
            *proposals.closing_ops(current, by, at),
            *writes.remove_ops(current),
        ]
        writes.commit(ops, mind_op_index=len(ops) - 1)
        return None

    return writes.retrying(attempt)
