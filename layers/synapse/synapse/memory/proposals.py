"""Proposals: an agent's change to what a person vouched for, waiting for a person's review.

An agent's write (Mind Key or hook; single, batch or store-by-key) that would change the content or
tags of a verified memory, or demote it (a lower priority or confidence, an expiry added or brought
forward: `changes.protected_change`), and an agent's delete of a verified memory, are not applied
when the mind's `agent_writes_to_verified` is `propose` (the default). Each becomes a proposal, an
item `PROP#<proposal id>` in the mind's partition (`action`: `update` or `delete`), and the memory
item gets `pending_proposal` (its id), in one transaction with no new version: the memory stays
exactly as the person verified it. A newer proposal for the same memory supersedes the pending one
in the same transaction. Raising priority or confidence, and removing or extending an expiry, apply
directly: they take nothing away from what was vouched for.

An agent's write that puts a memory at critical priority follows the mind's `agent_writes_critical`:
`allow` (the default) applies it, `deny` refuses it (403), `propose` applies it at `high` and
proposes `critical` (a new memory is created at `high`, with the proposal, in one transaction).

A person accepts (the proposed fields become a new version, `change: proposal_accepted`, verified by
them; a delete deletes the memory, `change: deleted`; 409 when the memory moved on from
`base_version`) or rejects (the memory stays; its mark goes).

Proposal ids start with their creation time (hex microseconds): PROP# read backwards is newest
first. Decided ones expire by TTL after `DECIDED_KEPT`; each keeps the memory as it was (`memory`)."""

import math
import secrets
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import Conflict, Forbidden, NotFound, Unprocessable
from synapse.core.ids import looks_like_id
from synapse.core.observability import logger
from synapse.memory import history, writes
from synapse.memory.changes import makes_critical, protected_change, superseded, verified
from synapse.memory.items import memory_body, memory_from_item
from synapse.memory.kinds import EDITABLE_FIELDS, Memory, Priority, Source
from synapse.minds import minds
from synapse.storage import pages, tables

PROPOSAL_PREFIX = "PROP#"
DECIDED_KEPT = timedelta(days=90)
PROPOSAL_FIELDS = (
    "id",
    "memory_id",
    "category",
    "key",
    "action",
    "proposed",
    "base_version",
    "status",
    "proposed_by",
    "created_at",
    "decided_by",
    "decided_at",
    "superseded_by",
)


class Status(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"


class Action(StrEnum):
    """What accepting a proposal does: apply its `proposed` fields, or delete the memory."""

    UPDATE = "update"
    DELETE = "delete"
    SUPERSEDE = "supersede"  # mark the memory replaced by `superseded_by` (`memory.supersede`)


def proposal_key(mind_id: str, proposal_id: str) -> dict[str, str]:
    return {"pk": mind_id, "sk": PROPOSAL_PREFIX + proposal_id}


def new_proposal_id(at: datetime) -> str:
    return f"prop_{clock.epoch_micros(at):014x}{secrets.token_urlsafe(8)}"


def public(item: dict[str, Any]) -> dict[str, Any]:
    """The proposal as the API shows it; a stored value no write makes (a restore from before
    restores were checked, say) is shown as null, or 0 for `base_version`, which then matches no
    memory's version (accepting it is a 409), and logged: a read never fails on it."""
    shown = {name: item.get(name) for name in PROPOSAL_FIELDS}
    shown["action"] = item.get("action") or Action.UPDATE.value  # proposals made before deletes were
    stored = item.get("proposed")
    proposed = dict(stored) if isinstance(stored, dict) else {}
    confidence = proposed.get("confidence")
    proposed["confidence"] = _number(confidence)
    shown["proposed"] = {name: proposed.get(name) for name in EDITABLE_FIELDS}
    whole = _number(item.get("base_version"))
    shown["base_version"] = int(whole) if whole is not None and whole.is_integer() else 0
    lost_confidence = confidence is not None and proposed["confidence"] is None
    if not isinstance(stored, dict) or lost_confidence or whole is None or not whole.is_integer():
        logger.warning("a stored proposal holds values no write makes", extra={"proposal_id": item.get("id")})
    return shown


def _number(value: Any) -> float | None:
    """A stored number as a float; None for anything else (text, a bool, NaN)."""
    if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
        return None
    return float(value) if math.isfinite(value) else None


def _applicable(proposed: dict[str, Any]) -> dict[str, Any]:
    """The proposed fields, if a write of them would be taken (PUT /memory's rules); else 409.
    The body rules are imported here, on accepting: the handlers that only read, list, reject or
    make proposals take no request body and do not load them at cold start (issue 35)."""
    from synapse.memory.model import StoredPatch

    try:
        StoredPatch.from_body({name: proposed.get(name) for name in EDITABLE_FIELDS})
    except Unprocessable as refused:
        raise Conflict(
            f"This proposal holds values no write would store ({refused.message}): reject it."
        ) from None
    return proposed


def memory_of(item: dict[str, Any]) -> Memory:
    """The memory a proposal item keeps (as it was at the proposal or its decision)."""
    return memory_from_item(item["memory"])


class Review(NamedTuple):
    """What of a write applies now (`apply`; None: nothing) and what waits for a person's review
    (`propose`, the memory a proposal asks for; None: nothing)."""

    apply: Memory | None
    propose: Memory | None


def review(current: Memory | None, candidate: Memory, source: Source) -> Review:
    """How a write of `candidate` over `current` (None: a new memory) goes, by the mind's settings.

    A person's write, and an agent's that neither touches what a person vouched for nor puts a
    memory at critical, apply as they are. The settings are read only otherwise (a rare path).
    """
    protected = (
        source is Source.AGENT
        and current is not None
        and current.verified
        and protected_change(current, candidate)
    )
    critical = source is Source.AGENT and makes_critical(current, candidate)
    if not (protected or critical):
        return Review(candidate, None)
    settings = minds.settings_of(candidate.mind_id)
    if critical and settings.agent_writes_critical == "deny":
        raise Forbidden(
            "priority: this mind does not let agents set critical priority (its agent_writes_critical "
            "setting is 'deny'); store the memory as 'high', or ask a person to make it critical.",
            details=[{"field": "priority", "rule": "agent_writes_critical"}],
        )
    if protected and settings.agent_writes_to_verified == "propose":
        return Review(None, candidate)
    if critical and settings.agent_writes_critical == "propose":
        return Review(candidate._replace(priority=Priority.HIGH.value), candidate)
    return Review(candidate, None)


def delete_wanted(current: Memory, source: Source) -> bool:
    """Whether an agent's delete must wait for review: the memory is verified and the mind's
    `agent_writes_to_verified` is `propose`."""
    if source is not Source.AGENT or not current.verified:
        return False
    return minds.settings_of(current.mind_id).agent_writes_to_verified == "propose"


def _decide(
    mind_id: str, proposal_id: str, status: Status, at: datetime, by: writes.ChangedBy | None, memory: Memory
) -> dict[str, Any]:
    """Move a pending proposal to `status` (fails the transaction if it is no longer pending)."""
    sets = "#status = :status, decided_at = :at, #ttl = :ttl, #memory = :memory"
    values: dict[str, Any] = {
        "status": status.value,
        "at": clock.to_iso(at),
        "ttl": int((at + DECIDED_KEPT).timestamp()),
        "memory": memory_body(memory),
        "pending": Status.PENDING.value,
    }
    if by is not None:
        sets += ", decided_by = :by"
        values["by"] = dict(by)
    return writes.update(
        proposal_key(mind_id, proposal_id),
        "SET " + sets,
        values,
        {"#status": "status", "#ttl": "ttl", "#memory": "memory"},
        condition="#status = :pending",
    )


def proposal_ops(
    base: Memory,
    candidate: Memory,
    changed_by: writes.ChangedBy,
    at: datetime,
    action: Action = Action.UPDATE,
    superseded_by: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], Memory]:
    """The proposal of `candidate` (or of deleting `base`, or of marking it replaced by
    `superseded_by`) over `base`, the memory as it is about to be stored: the proposal's operations
    (its Put, and superseding `base`'s pending one), its JSON, and `base` marked with it. The
    caller writes the marked memory in the same transaction."""
    proposal_id = new_proposal_id(at)
    marked = base._replace(pending_proposal=proposal_id)
    item = {
        **proposal_key(base.mind_id, proposal_id),
        "id": proposal_id,
        "memory_id": base.id,
        "category": base.category,
        "key": base.key,
        "action": action.value,
        "proposed": {name: getattr(candidate, name) for name in EDITABLE_FIELDS},
        "base_version": base.version,
        "status": Status.PENDING.value,
        "proposed_by": dict(changed_by),
        "created_at": clock.to_iso(at),
        "memory": memory_body(marked),
        "superseded_by": superseded_by,
    }
    ops = [writes.put(item)]
    if base.pending_proposal is not None:
        ops.append(_decide(base.mind_id, base.pending_proposal, Status.SUPERSEDED, at, None, marked))
    return ops, public(item), marked


def propose_ops(
    current: Memory,
    candidate: Memory,
    changed_by: writes.ChangedBy,
    at: datetime,
    action: Action = Action.UPDATE,
    superseded_by: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any], Memory]:
    """The proposal of `candidate` (or of deleting `current`, or of marking it replaced) with
    `current` left as it is, only marked: operations, the proposal's JSON, the marked memory."""
    ops, proposal, marked = proposal_ops(current, candidate, changed_by, at, action, superseded_by)
    return [*writes.replace_ops(current, marked), *ops], proposal, marked


def closing_ops(current: Memory, by: writes.ChangedBy, at: datetime) -> list[dict[str, Any]]:
    """When a memory with a pending proposal is deleted, the proposal is superseded with it."""
    if current.pending_proposal is None:
        return []
    return [_decide(current.mind_id, current.pending_proposal, Status.SUPERSEDED, at, by, current)]


# ---------------------------------------------------------------- reading


def _item(mind_id: str, proposal_id: str) -> dict[str, Any]:
    item = None
    if looks_like_id("prop_", proposal_id):
        item = tables.get(tables.memories_table(), proposal_key(mind_id, proposal_id))
    if item is None:
        raise NotFound(f"No proposal {proposal_id[:80]!r} in this mind.")
    return item


def get_proposal(mind_id: str, proposal_id: str) -> dict[str, Any]:
    return public(_item(mind_id, proposal_id))


def list_proposals(
    mind_id: str, filters: dict[str, str | None], limit: int, after: str | None
) -> pages.Page[dict[str, Any]]:
    """Newest first; `filters` may name `status`, `memory_id` and `category` (exact matches;
    None: any)."""

    def start_key(position: dict[str, Any]) -> dict[str, str] | None:
        sort_key = position["sk"]
        fits = isinstance(sort_key, str) and sort_key.startswith(PROPOSAL_PREFIX)
        return {"pk": mind_id, "sk": sort_key} if fits else None

    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ScanIndexForward": False,
    }
    values: dict[str, Any] = {"pk": mind_id, "prefix": PROPOSAL_PREFIX}
    shown = {name: value for name, value in sorted(filters.items()) if value is not None}
    if shown:
        params["FilterExpression"] = " AND ".join(f"#{name} = :{name}" for name in shown)
        params["ExpressionAttributeNames"] = {f"#{name}": name for name in shown}
        values.update(shown)
    params["ExpressionAttributeValues"] = tables.values(**values)
    scope = "proposals?" + "&".join(f"{k}={v}" for k, v in shown.items())
    found = pages.read(params, mind_id, scope, limit, after, pages.Position(("sk",), start_key))
    return pages.Page([public(item) for item in found.items], found.next_cursor)


# ---------------------------------------------------------------- decisions


def _decided(item: dict[str, Any], status: Status, at: datetime, by: writes.ChangedBy) -> dict[str, Any]:
    return public({**item, "status": status.value, "decided_at": clock.to_iso(at), "decided_by": dict(by)})


def _pending(mind_id: str, proposal_id: str) -> dict[str, Any]:
    item = _item(mind_id, proposal_id)
    if item.get("status") != Status.PENDING.value:
        raise Conflict(f"This proposal is already {item.get('status')}; only a pending one can be decided.")
    return item


def accepted(current: Memory, proposed: dict[str, Any], user_id: str, at: datetime) -> Memory:
    """`current` with the proposed fields, vouched for by `user_id` as its next version."""
    taken = current._replace(
        content=str(proposed["content"]),
        tags=list(proposed.get("tags") or []),
        priority=str(proposed["priority"]),
        confidence=float(proposed["confidence"]),
        expires_at=proposed.get("expires_at"),
        # a proposal made before occurred_at existed does not name it: it keeps the memory's
        occurred_at=proposed.get("occurred_at", current.occurred_at),
        pending_proposal=None,
    )
    return verified(taken, user_id, at)


def _superseding(current: Memory, by_id: str, at: datetime) -> Memory:
    """`current` marked replaced by `by_id` (a person's accept); 409 when that one is gone or a cycle."""
    newer = writes.find_by_id(current.mind_id, by_id)
    if newer is None:
        raise Conflict("The memory that would replace this one has been deleted; reject the proposal.")
    if newer.superseded_by == current.id:
        raise Conflict("The memory that would replace this one is now replaced by it; reject the proposal.")
    return superseded(current, by_id, at)._replace(pending_proposal=None)


def accept(
    mind_id: str, proposal_id: str, user_id: str, changed_by: writes.ChangedBy
) -> tuple[dict[str, Any], Memory | None]:
    """Apply a pending proposal as a new version, verified by `user_id`, or delete the memory when
    it proposes that (then the memory is None); 409 if the memory moved on."""

    def attempt() -> tuple[dict[str, Any], Memory | None]:
        item = _pending(mind_id, proposal_id)
        current = writes.find_by_id(mind_id, str(item["memory_id"]))
        if current is None:
            raise Conflict("The memory this proposal would change has been deleted; reject the proposal.")
        if current.version != public(item)["base_version"]:
            raise Conflict(
                f"The memory has changed since this proposal was made (version {item['base_version']}, "
                f"now {current.version}): look at it again, then reject the proposal or change it yourself."
            )
        at = clock.now()
        if item.get("action") == Action.DELETE.value:
            ops = [
                *history.deleted_ops(current, changed_by, at),
                _decide(mind_id, proposal_id, Status.ACCEPTED, at, changed_by, current),
                *writes.remove_ops(current),
            ]
            writes.commit(ops, mind_op_index=len(ops) - 1)
            return _decided(item, Status.ACCEPTED, at, changed_by), None
        if item.get("action") == Action.SUPERSEDE.value:
            memory = _superseding(current, str(item.get("superseded_by")), at)
            writes.commit(
                writes.replace_ops(current, memory)
                + history.revision_ops(memory, history.Change.SUPERSEDED, changed_by, at)
                + [_decide(mind_id, proposal_id, Status.ACCEPTED, at, changed_by, memory)]
            )
            return _decided(item, Status.ACCEPTED, at, changed_by), memory
        memory = accepted(current, _applicable(public(item)["proposed"]), user_id, at)
        writes.commit(
            writes.replace_ops(current, memory)
            + history.revision_ops(memory, history.Change.PROPOSAL_ACCEPTED, changed_by, at)
            + [_decide(mind_id, proposal_id, Status.ACCEPTED, at, changed_by, memory)]
        )
        return _decided(item, Status.ACCEPTED, at, changed_by), memory

    return writes.retrying(attempt)


def reject(
    mind_id: str, proposal_id: str, changed_by: writes.ChangedBy
) -> tuple[dict[str, Any], Memory | None]:
    """Turn a pending proposal down: the memory stays as it is, without its mark."""

    def attempt() -> tuple[dict[str, Any], Memory | None]:
        item = _pending(mind_id, proposal_id)
        current = writes.find_by_id(mind_id, str(item["memory_id"]))
        at = clock.now()
        ops: list[dict[str, Any]] = []
        memory = current
        if current is not None and current.pending_proposal == proposal_id:
            memory = current._replace(pending_proposal=None)
            ops = writes.replace_ops(current, memory)
        kept = memory if memory is not None else memory_of(item)
        writes.commit([*ops, _decide(mind_id, proposal_id, Status.REJECTED, at, changed_by, kept)])
        return _decided(item, Status.REJECTED, at, changed_by), memory

    return writes.retrying(attempt)
