"""POST /minds/{mind_id}/restore: a backup's lines into a new or empty mind, a chunk per request.

A restore job item (`RESTORE` in the mind's partition of the Memories table) records the backup
(its id and the digest of its header line), the next line to apply, the running digest and the
counts so far. Every transaction that applies lines also moves the job on, conditioned on where it
stood: what is applied and what the job says are never apart, so a request that fails part-way, or
is sent twice, resumes exactly where the last commit left it, and nothing doubles.

A line is applied only once the line after it has vouched for its bytes (the chain of
`format`); so the last line of a chunk waits for the next chunk (the answer's `next_line`), except
the trailer, which ends the stream. Each line is written with the store's own operations
(`writes.create_ops` for a memory: item, id pointer, tag copies, counters, the mind's count;
`history.revision_put` for a revision), so indexes, counters and search see a restored memory as
they see a stored one. Memory and proposal ids are kept: they are scoped to the mind.
"""

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import BadRequest, Conflict
from synapse.memory import writes
from synapse.minds import audit
from synapse.minds.minds import Mind
from synapse.portability import checks, consistency, format, records
from synapse.portability.trust import KEPT, PARTIAL, RESTORER, STATES, Trust
from synapse.storage import tables

JOB_SK = "RESTORE"
MAX_BODY_BYTES = 1024 * 1024  # a chunk of lines; the local runner takes 1 MiB, Lambda 6 MB
BUDGET_SECONDS = 10.0  # applying stops after this (the answer says where to go on); API Gateway: 29 s
ROOM = 1  # each transaction's own action: moving the job on


class Job(NamedTuple):
    backup_id: str
    header_sha: str
    status: str
    next_line: int
    digest: bytes
    counts: dict[str, int]
    source: dict[str, Any]
    trust: str = RESTORER  # KEPT while every line applied was vouched for by this deployment

    def answer(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "backup_id": self.backup_id,
            "next_line": self.next_line,
            "counts": {kind: count for kind, count in sorted(self.counts.items()) if count},
            "source": self.source,
            "ids": "kept",
            "trust": self.trust,
        }


def job_key(mind_id: str) -> dict[str, str]:
    return {"pk": mind_id, "sk": JOB_SK}


def read_job(mind_id: str) -> Job | None:
    item = tables.get(tables.memories_table(), job_key(mind_id))
    if item is None:
        return None
    return Job(
        str(item["backup_id"]),
        str(item["header_sha"]),
        str(item["status"]),
        int(item["next_line"]),
        bytes.fromhex(str(item["digest"])),
        {str(kind): int(count) for kind, count in (item.get("counts") or {}).items()},
        dict(item.get("source") or {}),
        str(item["trust"]) if item.get("trust") in STATES else RESTORER,
    )


class Checked(NamedTuple):
    """A line that fits the stream, with the digest and counts the stream has once it is applied,
    whether the next line's signature vouches for it (`trust`) and, for the trailer, whether this
    deployment sealed the stream there (`format.seal`)."""

    record: dict[str, Any]
    digest: bytes
    counts: dict[str, int]
    vouched: bool = False
    sealed: bool = False


# ---------------------------------------------------------------- starting


def _first_number(line: bytes) -> int | None:
    """The number a chunk's first line carries (None if it has none: the checks then name it)."""
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    n = record.get("n") if isinstance(record, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _holds_anything(mind: Mind) -> bool:
    """Whether the mind has memories, revisions (deleted memories too) or proposals."""
    if mind.memory_count:
        return True
    for prefix in (tables.MEMORY_PREFIX, "REV#", "PROP#"):
        found, _ = next(
            tables.query_pages(
                TableName=tables.memories_table(),
                KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
                ExpressionAttributeValues=tables.values(pk=mind.id, prefix=prefix),
                ProjectionExpression="pk, sk",
                Limit=1,
            )
        )
        if found:
            return True
    return False


def _new_job(header: Checked, line: bytes) -> Job:
    """The job a backup's header starts (its source checked: `checks.source`), not yet written."""
    return Job(
        str(header.record["backup_id"]),
        hashlib.sha256(line).hexdigest(),
        "running",
        2,
        header.digest,
        {},
        checks.source(header.record),
        KEPT if header.vouched else RESTORER,
    )


def _empty(mind: Mind) -> None:
    if _holds_anything(mind):
        raise Conflict(
            "This mind is not empty: a backup restores into a new or empty mind (create one, or "
            "delete what this one holds).",
            details=[{"line": 1, "rule": "empty_mind"}],
        )


def _start(mind: Mind, user: str, job: Job) -> None:
    """Write the job while the mind is empty (`_empty` looked; the Minds item's count is checked
    in the same transaction)."""
    item = {
        **job_key(mind.id),
        **job._asdict(),
        "digest": job.digest.hex(),
        "started_at": clock.to_iso(clock.now()),
        "by": audit.by_user(user),
    }
    empty = {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind.id)),
            "ConditionExpression": "attribute_exists(pk)"
            " AND (attribute_not_exists(memory_count) OR memory_count = :zero)",
            "ExpressionAttributeValues": tables.values(zero=0),
        }
    }
    try:
        tables.transact([empty, writes.put(item, "attribute_not_exists(pk)")])
    except tables.client().exceptions.TransactionCanceledException:
        raise Conflict(
            "This mind changed as its restore began (written to, or restored by another "
            "request): look at it again."
        ) from None


def _resumed(job: Job, lines: list[bytes], first: int | None) -> int | None:
    """The index in `lines` of the job's next line; None when nothing in them is new."""
    if first == 1 and hashlib.sha256(lines[0]).hexdigest() != job.header_sha:
        raise Conflict(
            f"This mind is restored (or being restored) from another backup, {job.backup_id}: restore "
            "this one into a new or empty mind.",
            details=[{"line": 1, "rule": "other_backup", "backup_id": job.backup_id}],
        )
    if job.status == "done":
        return None
    if first is None or first > job.next_line:
        raise Conflict(
            f"The restore stands at line {job.next_line}: send the lines from there.",
            details=[{"line": job.next_line, "rule": "resume"}],
        )
    offset = job.next_line - first
    return offset if offset < len(lines) else None


# ---------------------------------------------------------------- applying


class Chunk(NamedTuple):
    """A chunk's lines to apply, checked, and the one held back for the next chunk (if any)."""

    lines: list[Checked]
    held: dict[str, Any] | None


def _checked(lines: list[bytes], checker: format.Checker, last: bool) -> Chunk:
    """The lines, each checked against the stream so far (values JSON cannot carry back out
    refused: `checks.plain`), the one a next line must vouch for held back; each marked vouched
    for when the line after it carries this deployment's signature."""
    found: list[Checked] = []
    for line in lines:
        record = checker.check(line)
        checks.plain(record, int(record["n"]))
        if found:
            found[-1] = found[-1]._replace(vouched=checker.signed)
        found.append(Checked(record, checker.digest, dict(checker.counts), sealed=checker.sealed))
    if last:
        checker.finish()
    if found and found[-1].record["kind"] != format.END:
        return Chunk(found[:-1], found[-1].record)
    return Chunk(found, None)


def _ops(
    mind_id: str, job: Job, line: Checked, trust: Trust, state: str, resolved: consistency.Resolved
) -> list[dict[str, Any]]:
    """What applying one line writes (metadata and `deleted` lines write nothing: they inform)."""
    record, kind = line.record, line.record["kind"]
    if kind == format.MIND:
        return records.settings_ops(mind_id, record)
    if kind == "memory":
        return records.memory_ops(mind_id, record, trust, resolved)
    if kind == "revision":
        return [records.revision_op(mind_id, record, trust)]
    if kind == "proposal":
        return records.proposal_ops(mind_id, record, trust, resolved)
    if kind == format.END:
        target = {
            "backup_id": job.backup_id,
            "source": job.source,
            "counts": line.counts,
            "trust": state,
        }
        return [audit.put_operation(mind_id, "mind.restored", audit.by_user(trust.user), target)]
    return []


def _moved_on(mind_id: str, start: int, upto: Checked, trust: str) -> dict[str, Any]:
    """The job's own action: from line `start` to the line after `upto`, with its digest, counts
    and trust."""
    done = upto.record["kind"] == format.END
    sets = "next_line = :next, digest = :digest, #counts = :counts, #trust = :trust" + (
        ", #status = :done, finished_at = :at" if done else ""
    )
    values: dict[str, Any] = {
        "next": int(upto.record["n"]) + 1,
        "digest": upto.digest.hex(),
        "counts": upto.counts,
        "start": start,
        "trust": trust,
    }
    if done:
        values.update(done="done", at=clock.to_iso(clock.now()))
    return writes.update(
        job_key(mind_id),
        "SET " + sets,
        values,
        {"#counts": "counts", "#trust": "trust", **({"#status": "status"} if done else {})},
        condition="next_line = :start",
    )


def _commit(mind_id: str, ops: list[dict[str, Any]], first: int, last: int) -> bool:
    """One transaction; False when the job had moved on (another request applied these lines)."""
    try:
        tables.transact(ops)
    except tables.client().exceptions.TransactionCanceledException as error:
        if tables.cancellation_codes(error)[-1:] == ["ConditionalCheckFailed"]:
            return False
        raise Conflict(
            f"Lines {first}-{last} could not be restored: the mind changed meanwhile (a memory written "
            "into it, or the mind deleted).",
            details=[{"line": first, "rule": "mind_changed"}],
        ) from None
    return True


class Plan(NamedTuple):
    """What applying each checked line writes, and the job's trust once it is applied."""

    ops: list[tuple[int, list[dict[str, Any]]]]
    trust: list[str]


def _plan(mind_id: str, job: Job, chunk: Chunk, user: str) -> Plan:
    """Every line's writes, built (and so checked: `checks`, then `consistency` across lines)
    before any is committed, so a chunk with a line a write would refuse leaves the job where it
    stood. Trust is kept up to the first line no signature of this deployment vouches for
    (`trust`), and not after it; a stream whose every line was vouched for ends `partial`, not
    `kept`, when its trailer carries no seal."""
    at, state, plan = clock.to_iso(clock.now()), job.trust, Plan([], [])
    checked = chunk.lines
    held = [chunk.held] if chunk.held is not None else []
    resolved = consistency.check(mind_id, [line.record for line in checked] + held, len(checked))
    for index, line in enumerate(checked):
        ends = line.record["kind"] == format.END
        if not line.vouched and not ends:
            state = RESTORER
        elif ends and state == KEPT and not line.sealed:
            state = PARTIAL
        trust = Trust(state == KEPT, user, at)
        plan.ops.append((index, _ops(mind_id, job, line, trust, state, resolved)))
        plan.trust.append(state)
    return plan


def _groups(mind_id: str, checked: list[Checked], plan: Plan) -> Iterator[writes.Group]:
    """The plan's transactions; the trailer's alone, after every memory line is in and what a
    memory's superseded_by names has come or never will (`consistency.settle`)."""
    ends = bool(checked) and checked[-1].record["kind"] == format.END
    yield from writes.groups(plan.ops[:-1] if ends else plan.ops, writes.MAX_ACTIONS - ROOM)
    if ends:
        consistency.settle(mind_id)
        yield from writes.groups(plan.ops[-1:], writes.MAX_ACTIONS - ROOM)


def _apply(mind_id: str, job: Job, checked: list[Checked], plan: Plan) -> Job:
    """The checked lines in as few transactions as fit, each moving the job on; stops after the budget."""
    deadline = time.monotonic() + BUDGET_SECONDS
    for group in _groups(mind_id, checked, plan):
        last = group.members[-1]
        upto, trust = checked[last], plan.trust[last]
        first = int(checked[group.members[0]].record["n"])
        moved = _moved_on(mind_id, job.next_line, upto, trust)
        if not _commit(mind_id, [*group.ops, moved], first, int(upto.record["n"])):
            return read_job(mind_id) or job
        done = upto.record["kind"] == format.END
        job = job._replace(
            next_line=int(upto.record["n"]) + 1,
            digest=upto.digest,
            counts=upto.counts,
            status="done" if done else job.status,
            trust=trust,
        )
        if time.monotonic() > deadline:
            break
    return job


def restore(mind: Mind, user: str, body: bytes, last: bool) -> dict[str, Any]:
    """Apply a chunk of a backup's lines to `mind` (its owner's check is the caller's); the answer
    says where the restore stands (`status` running or done, `next_line` to send next)."""
    lines = format.lines_of(body)
    if not lines:
        raise BadRequest("The body holds no lines: send the backup's lines (application/x-ndjson).")
    first = _first_number(lines[0])
    job = read_job(mind.id)
    if job is None:
        if first is not None and first != 1:
            raise Conflict(
                "No restore is under way in this mind: send the backup from its first line.",
                details=[{"line": 1, "rule": "resume"}],
            )
        chunk = _checked(lines, format.Checker(key=format.signing_key), last)
        if not chunk.lines:
            return {"status": "running", "next_line": 1, "ids": "kept"}
        _empty(mind)
        job = _new_job(chunk.lines[0], lines[0])
        chunk = chunk._replace(lines=chunk.lines[1:])
        plan = _plan(mind.id, job, chunk, user)
        _start(mind, user, job)
    else:
        offset = _resumed(job, lines, first)
        if offset is None:
            return job.answer()
        checker = format.Checker(job.next_line, job.digest, job.counts, format.signing_key)
        chunk = _checked(lines[offset:], checker, last)
        plan = _plan(mind.id, job, chunk, user)
    return _apply(mind.id, job, chunk.lines, plan).answer()
