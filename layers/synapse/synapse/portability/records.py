"""What each line of a backup holds (docs/backup.md), back into a mind: a restore's memories,
revisions and proposals, checked as a write checks them (`checks`) and vouched for as far as the
restore can (`trust`), and the writes that put each line in (`settings_ops`, `memory_ops`,
`proposal_ops`, `revision_op`) as the chunk's references resolve (`consistency`). The way out,
from the stored items to the lines, is `export`: a backup loads none of these checks (issue 35).

Memories, revisions and proposals hold the memory as the store keeps it (`items.memory_body`),
without `mind_id`: a backup is of one mind, named once in its header, and a restore puts every
memory in the mind it restores into. Everything else arrives exactly as it left.
"""

from __future__ import annotations

from typing import Any

from synapse.core import clock
from synapse.memory import expiry, history, proposals, writes
from synapse.memory.items import memory_body
from synapse.memory.kinds import Memory
from synapse.portability import checks, consistency
from synapse.portability.format import Refused
from synapse.portability.trust import VOUCHING, Trust
from synapse.storage import tables

PROPOSAL_ATTRIBUTES = (*proposals.PROPOSAL_FIELDS, "ttl")


def memory_in(mind_id: str, record: dict[str, Any], trust: Trust) -> Memory:
    """A `memory` line's memory in `mind_id`, checked as a write checks it (`checks`), with the
    verification the restore can stand behind (`trust`)."""
    return trust.memory(checks.memory(mind_id, record.get("memory"), int(record["n"])))[0]


def revision_op(mind_id: str, record: dict[str, Any], trust: Trust) -> dict[str, Any]:
    """The Put of a `revision` line's item in `mind_id`, built as the write path builds it."""
    n = int(record["n"])
    held = checks.memory(mind_id, record.get("memory"), n)
    try:
        change = history.Change(str(record.get("change")))
    except ValueError:
        shown = str(record.get("change"))[:40]
        raise Refused(n, "enum", f"has an unknown change {shown!r}", "change") from None
    checks.revision(record, held)
    memory, claim = trust.memory(held)
    if claim is None and not trust.kept and change in VOUCHING:
        claim = {}
    by = trust.changed_by(change, dict(record["changed_by"]), claim)
    if claim is None:
        claim = checks.claimed(record)  # a claim a restore noted before: kept as it is
    at = clock.from_iso(str(record["changed_at"]))
    return history.revision_put(memory, change, by, at, record.get("ttl"), claim or None)


def proposal_item(mind_id: str, record: dict[str, Any], trust: Trust) -> dict[str, Any]:
    """A `proposal` line's item in `mind_id`: its stored fields, the memory it keeps, its `ttl`."""
    held = checks.memory(mind_id, record.get("memory"), int(record["n"]))
    proposed = checks.proposal(record, held)
    snapshot, _ = trust.memory(held)
    item = {name: record.get(name) for name in PROPOSAL_ATTRIBUTES}
    item["proposed"] = proposed
    item["action"] = item["action"] or proposals.Action.UPDATE.value
    item["claimed"] = checks.claimed(record)
    if not trust.kept and item["status"] == proposals.Status.ACCEPTED.value:  # accepting vouches
        item["claimed"] = {"decided_by": item["decided_by"]}
        item["decided_by"] = trust.changed_by(history.Change.PROPOSAL_ACCEPTED, {}, None)
    return {**item, **proposals.proposal_key(mind_id, str(record["id"])), "memory": memory_body(snapshot)}


# ---------------------------------------------------------------- the writes of a line


def settings_ops(mind_id: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    fields = checks.settings(record)
    names = tuple(fields)
    return [
        {
            "Update": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(tables.mind_key(mind_id)),
                "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in names),
                "ConditionExpression": "attribute_exists(pk)",
                "ExpressionAttributeNames": {f"#{name}": name for name in names},
                "ExpressionAttributeValues": tables.values(**fields),
            }
        }
    ]


def memory_ops(
    mind_id: str, record: dict[str, Any], trust: Trust, resolved: consistency.Resolved
) -> list[dict[str, Any]]:
    """A memory's writes, marked only by a pending proposal of the file (`consistency`), and with a
    marker when what it is superseded by is not restored yet."""
    memory = memory_in(mind_id, record, trust)
    memory = memory._replace(pending_proposal=resolved.marks.get(memory.id))
    ops = writes.create_ops(memory)
    if memory.expires_at is not None and memory.superseded_by is None:  # a bucket the sweep still reads
        hour = max(memory.expires_at, clock.to_iso(clock.now()))[:13]
        bucket = expiry.bucket_key(hour, expiry.shard_of(mind_id))
        ops[0]["Put"]["Item"][expiry.BUCKET] = {"S": bucket}
    if memory.id in resolved.waiting:
        ops.append(consistency.waiting_put(memory))
    return ops


def proposal_ops(
    mind_id: str, record: dict[str, Any], trust: Trust, resolved: consistency.Resolved
) -> list[dict[str, Any]]:
    """A proposal's item; a pending one marks its memory restored by an earlier chunk (a memory of
    this chunk is written marked: `memory_ops`)."""
    ops = [writes.put(proposal_item(mind_id, record, trust))]
    memory = resolved.earlier.get(str(record.get("memory_id")))
    if memory is not None and resolved.marks.get(memory.id) == record.get("id"):
        ops += writes.replace_ops(memory, memory._replace(pending_proposal=str(record["id"])))
    return ops
