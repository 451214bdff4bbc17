"""What makes a restored mind consistent beyond each line's own values (`checks`; issue 40 item 2):
ids unique across the file, and every reference from one record to another resolvable.

A file edited and chained again can hold two memories with one id (afterwards one of them could be
neither deleted nor forgotten: the id leads to the other) or a memory marked with a pending
proposal the file does not hold (every later write to it would wait for that proposal and answer
429). So, before anything of a chunk is written, its lines are checked against each other and
against what earlier chunks applied (read back from the table: a backup may span many chunks):

- **unique**: a memory's id and its (category, key), a revision's (memory, version), a proposal's
  id: refused (422, rule `unique`) when an earlier line already holds it;
- **memory → proposal** (`pending_proposal`): a mark is not taken on a memory line's word. A
  pending proposal marks the memory it names, as the write that made it did; a memory line's
  `pending_proposal` that no pending proposal of the file answers is dropped (the memory can be
  written again; the proposal the line named is simply not there). A pending proposal must name a
  live memory of the file, at most one per memory (rule `reference`);
- **memory → memory** (`superseded_by`): must name a memory of the file. Memory lines come in
  (category, key) order, so the memory named may come later: a line whose target is not yet
  restored leaves a marker (`WAITING`), and before the trailer is applied each marker whose target
  never came has its memory's `superseded_by`/`superseded_at` dropped (`settle`). Naming itself is
  refused;
- **revision → memory**: a revision's memory is live in the file, or the file says it was deleted
  (its revisions are followed by its `deleted` line); a `deleted` line may not name a live memory.

A decided proposal may name a memory long gone (its history kept fewer days than proposals), and
`verified_by`, `changed_by`, `proposed_by` and `decided_by` name people and credentials, not lines
of the file: none of those is a reference a restore can resolve, so none is refused.
"""

from collections.abc import Iterable
from typing import Any, NamedTuple

from synapse.core.errors import Conflict
from synapse.core.ids import looks_like_id
from synapse.memory import history, proposals, writes
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.portability.format import Refused
from synapse.storage import batch_reads, tables

WAITING = "RESTORE#WAIT#"  # + memory id: a superseded_by whose memory is not yet restored
PENDING = proposals.Status.PENDING.value
ONCE = "each is once in a backup"
SECOND = "is a second pending proposal for its memory: a memory has at most one"
MAX_SK_BYTES = 1024  # DynamoDB's bound on a sort key: a longer (category, key) is the line checks' to refuse


class Resolved(NamedTuple):
    """What the chunk's references resolve to, for the writes that apply it."""

    marks: dict[str, str]  # memory id -> the pending proposal that marks it
    earlier: dict[str, Memory]  # memories of earlier chunks a pending proposal marks, as stored
    waiting: set[str]  # memory ids whose superseded_by names a memory not restored yet


def _memory_id(value: Any) -> str | None:
    """A memory id the file may name, or None (what is not one, the line's own checks refuse)."""
    return value if isinstance(value, str) and looks_like_id("mem_", value) else None


def _proposal_id(value: Any) -> str | None:
    return value if isinstance(value, str) and looks_like_id("prop_", value) else None


def _memory_of(record: dict[str, Any]) -> dict[str, Any]:
    body = record.get("memory")
    return body if isinstance(body, dict) else {}


class _Chunk:
    """The chunk's lines, what each claims, and the table's answer for what earlier chunks hold."""

    def __init__(self, mind_id: str, records: list[dict[str, Any]], applied: int) -> None:
        self.mind_id, self.records, self.applied = mind_id, records, applied
        self.ids: dict[str, int] = {}  # memory id -> its memory line
        self.keys: dict[str, int] = {}  # memory sk -> its memory line
        self.revisions: dict[str, int] = {}
        self.proposals: dict[str, int] = {}
        self.stored: dict[tuple[str, str], tables.Item] = {}

    def key(self, sk: str) -> tuple[str, str]:
        return (self.mind_id, sk)

    def lines(self, kind: str) -> Iterable[tuple[int, dict[str, Any]]]:
        for index, record in enumerate(self.records[: self.applied]):
            if record.get("kind") == kind:
                yield index, record

    def read(self) -> None:
        """One batch of reads for everything the chunk's lines may meet from earlier chunks."""
        named: list[Any] = []  # memory ids
        wanted: list[str | None] = []  # other sort keys
        for _, record in self.lines("memory"):
            body = _memory_of(record)
            named += [body.get("id"), body.get("superseded_by")]
            wanted.append(_memory_sk(body))
        for _, record in self.lines("revision"):
            named.append(record.get("memory_id"))
            wanted.append(_revision_sk(record))
        for _, record in self.lines("deleted"):
            named.append(record.get("memory_id"))
        for _, record in self.lines("proposal"):
            named.append(record.get("memory_id"))
            wanted.append(_proposal_sk(record))
        wanted += [tables.pointer_sk(memory_id) for memory_id in map(_memory_id, named) if memory_id]
        keys = [self.key(sk) for sk in wanted if sk is not None]
        self.stored = batch_reads.batch_get(tables.memories_table(), keys)

    def live(self, memory_id: Any) -> bool:
        """Whether `memory_id` is a memory of this chunk's lines or restored by an earlier one."""
        named = _memory_id(memory_id)
        return named is not None and (named in self.ids or self.key(tables.pointer_sk(named)) in self.stored)

    def unique(self, seen: dict[str, int], index: int, sk: str | None, field: str, what: str) -> None:
        """Refused when line `index` repeats `sk` (`what` it holds) of an earlier line, of this chunk
        or of one applied before it; else noted for the lines after it."""
        if sk is None:
            return
        n = int(self.records[index]["n"])
        if sk in seen:
            earlier = self.records[seen[sk]]["n"]
            raise Refused(n, "unique", f"repeats {what} of line {earlier}: {ONCE}", field)
        if self.key(sk) in self.stored:
            raise Refused(n, "unique", f"repeats {what} of an earlier line: {ONCE}", field)
        seen[sk] = index


def _fits(sk: str) -> str | None:
    return sk if len(sk.encode("utf-8")) <= MAX_SK_BYTES else None


def _memory_sk(body: dict[str, Any]) -> str | None:
    category, key = body.get("category"), body.get("key")
    if not (isinstance(category, str) and isinstance(key, str)):
        return None
    return _fits(tables.memory_sk(category, key))


def _revision_sk(record: dict[str, Any]) -> str | None:
    memory_id, version = _memory_id(record.get("memory_id")), record.get("version")
    if memory_id is None or not isinstance(version, int) or isinstance(version, bool):
        return None
    return str(history.revision_key("", memory_id, version)["sk"]) if 0 <= version < 10**10 else None


def _proposal_sk(record: dict[str, Any]) -> str | None:
    proposal_id = _proposal_id(record.get("id"))
    return proposals.PROPOSAL_PREFIX + proposal_id if proposal_id else None


def _memories(chunk: _Chunk) -> None:
    for index, record in chunk.lines("memory"):
        body = _memory_of(record)
        memory_id = _memory_id(body.get("id"))
        pointer = tables.pointer_sk(memory_id) if memory_id else None
        chunk.unique(chunk.ids, index, pointer, "memory.id", "a memory's id")
        chunk.unique(chunk.keys, index, _memory_sk(body), "memory.key", "a memory's category and key")
    chunk.ids = {sk[len(tables.POINTER_PREFIX) :]: index for sk, index in chunk.ids.items()}


def _supersedes(chunk: _Chunk) -> set[str]:
    """The memories whose superseded_by names a memory not restored yet (nor in this chunk)."""
    waiting: set[str] = set()
    for _, record in chunk.lines("memory"):
        body = _memory_of(record)
        target = body.get("superseded_by")
        if target is None:
            continue
        if target == body.get("id"):
            raise Refused(int(record["n"]), "reference", "names the memory itself", "memory.superseded_by")
        if not chunk.live(target):
            waiting.add(str(body.get("id")))
    return waiting


def _revisions(chunk: _Chunk) -> None:
    following = [*chunk.records[1:], {}]
    for index, record in chunk.lines("revision"):
        n, memory_id = int(record["n"]), record.get("memory_id")
        sk = _revision_sk(record)
        chunk.unique(chunk.revisions, index, sk, "version", "a revision's memory and version")
        after = following[index]
        goes_on = after.get("kind") in {"revision", "deleted"} and after.get("memory_id") == memory_id
        if not goes_on and not chunk.live(memory_id):
            raise Refused(
                n,
                "reference",
                "names a memory the backup neither holds nor says was deleted (its `deleted` line)",
                "memory_id",
            )
    for _, record in chunk.lines("deleted"):
        if chunk.live(record.get("memory_id")):
            n = int(record["n"])
            raise Refused(n, "reference", "names a memory the backup holds as live", "memory_id")


def _proposals(chunk: _Chunk) -> tuple[dict[str, str], list[str]]:
    """The marks pending proposals make, and the memories of earlier chunks they mark."""
    marks: dict[str, str] = {}
    earlier: list[str] = []
    for index, record in chunk.lines("proposal"):
        n, proposal_id = int(record["n"]), str(record.get("id"))
        chunk.unique(chunk.proposals, index, _proposal_sk(record), "id", "a proposal's id")
        if record.get("status") != PENDING:
            continue
        memory_id = record.get("memory_id")
        if not chunk.live(memory_id):
            raise Refused(n, "reference", "is pending for a memory the backup does not hold", "memory_id")
        if str(memory_id) in marks:
            raise Refused(n, "reference", SECOND, "memory_id")
        marks[str(memory_id)] = proposal_id
        if str(memory_id) not in chunk.ids:
            earlier.append(str(memory_id))
    return marks, earlier


def _stored_memories(chunk: _Chunk, memory_ids: list[str]) -> dict[str, Memory]:
    """The memories earlier chunks restored, as stored (each by its id pointer)."""
    pointers = [chunk.stored[chunk.key(tables.pointer_sk(memory_id))] for memory_id in memory_ids]
    found = batch_reads.batch_get(
        tables.memories_table(), [chunk.key(str(pointer["memory_sk"])) for pointer in pointers]
    )
    memories = {str(item["id"]): memory_from_item(item) for item in found.values()}
    if set(memory_ids) - set(memories):
        raise Conflict("A memory this restore wrote changed meanwhile (written to, or deleted).")
    return memories


def check(mind_id: str, records: list[dict[str, Any]], applied: int) -> Resolved:
    """Refuse (`format.Refused`, naming the line and the field) the first of the chunk's `applied`
    lines that breaks a rule above; `records` may hold one more line (the one held back for the
    next chunk), read only to see where a deleted memory's revisions end."""
    chunk = _Chunk(mind_id, records, applied)
    chunk.read()
    _memories(chunk)
    waiting = _supersedes(chunk)
    _revisions(chunk)
    marks, earlier = _proposals(chunk)
    stored = _stored_memories(chunk, earlier) if earlier else {}
    for memory_id, memory in stored.items():
        if memory.pending_proposal is not None:
            index = next(i for i, r in chunk.lines("proposal") if r.get("id") == marks[memory_id])
            raise Refused(
                int(chunk.records[index]["n"]),
                "reference",
                SECOND,
                "memory_id",
            )
    return Resolved(marks, stored, waiting)


# ---------------------------------------------------------------- superseded_by, once memories are in


def waiting_put(memory: Memory) -> dict[str, Any]:
    """The marker of a memory whose superseded_by names a memory not restored yet."""
    item = {"pk": memory.mind_id, "sk": WAITING + memory.id, "target": memory.superseded_by}
    return writes.put(item)


def settle(mind_id: str) -> int:
    """Before the trailer: each marker whose memory came is removed; each whose memory never came
    has its memory's superseded_by and superseded_at dropped with it, in one transaction. Safe to
    run again (a restore resumed at its trailer): a settled marker is gone. How many were dropped."""
    markers = list(
        tables.query_all(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=mind_id, prefix=WAITING),
        )
    )
    targets = batch_reads.batch_get(
        tables.memories_table(), [(mind_id, tables.pointer_sk(str(m.get("target")))) for m in markers]
    )
    came, dropped = [], 0
    for marker in markers:
        if (mind_id, tables.pointer_sk(str(marker.get("target")))) in targets:
            came.append({"pk": mind_id, "sk": str(marker["sk"])})
            continue
        memory = writes.find_by_id(mind_id, str(marker["sk"])[len(WAITING) :])
        ops = [writes.delete({"pk": mind_id, "sk": str(marker["sk"])})]
        if memory is not None and memory.superseded_by == marker.get("target"):
            ops += writes.replace_ops(memory, memory._replace(superseded_by=None, superseded_at=None))
            dropped += 1
        try:
            tables.transact(ops)
        except tables.client().exceptions.TransactionCanceledException:
            raise Conflict("A memory this restore wrote changed meanwhile: send the trailer again.") from None
    tables.batch_delete(tables.memories_table(), came)
    return dropped
