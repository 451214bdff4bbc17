"""Export a mind to JSON Lines and import such a file into a mind: backups and migrations.

Export writes every memory (expired ones too) with all its fields, one JSON object per line,
following `next_cursor` to the end. Import stores them with `POST /memory/batch`, 100 per request
(`parallel` requests at a time, one by default), keyed by (category, key): importing a file twice
replaces rather than duplicates. What a mind assigns itself (id, version, timestamps) is the
importing mind's; source and verification stay honest (`Writers`): an import never makes an agent's
memory a verified one. A record whose expiry has passed is skipped and counted (`skipped_expired`):
a write may not set an expiry in the past, and an expired memory is out of recall anyway; a backup
(`backup.py`) is what keeps expired memories. docs/importing.md tells the rules and the importers
of other tools' formats.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from synapse_client.errors import SynapseError

if TYPE_CHECKING:  # annotations only: `synapse import --help` and the CLI's parser need no httpx
    from synapse_client.client import Synapse
    from synapse_client.models import BatchAnswer, BatchResult

CHUNK = 100  # POST /memory/batch takes at most 100 memories
# Batch requests in flight at once. One by default: 4 at once was slower on make run (283 s → 401 s
# for 5,000 memories; bench/export_import.py), where runner and DynamoDB Local share the CPUs.
PARALLEL = 1
WRITE_FIELDS = ("category", "key", "content", "tags", "priority", "confidence", "expires_at", "occurred_at")

Progress = Callable[[int], None]


def export(client: Synapse, out: IO[str], progress: Progress | None = None) -> int:
    """Write every memory of the client's mind to `out` as JSON Lines; returns how many."""
    count = 0
    for memory in client.iter_memories(include_expired=True, limit=100):
        out.write(json.dumps(memory.model_dump(mode="json"), ensure_ascii=False) + "\n")
        count += 1
        if progress is not None:
            progress(count)
    return count


def write_body(record: dict[str, Any]) -> dict[str, Any]:
    """What `POST /memory` takes of an exported memory (null fields left out)."""
    return {name: record[name] for name in WRITE_FIELDS if record.get(name) is not None}


def has_expired(record: dict[str, Any], now: datetime) -> bool:
    """Whether the record's `expires_at` is at or before `now`. One the server would not read as a
    moment (no zone, not a timestamp) is not: it is sent, and its error names the field."""
    value = record.get("expires_at")
    if not isinstance(value, str):
        return False
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return False
    return moment.tzinfo is not None and moment <= now


def read_lines(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"line {number}: not a JSON object")
        try:
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"line {number}: holds a lone UTF-16 surrogate (\\ud800-\\udfff): not text"
            ) from None
        yield record


@dataclass
class ImportReport:
    created: int = 0
    replaced: int = 0
    proposed: int = 0
    failed: int = 0
    skipped_expired: int = 0  # expired by the time of the import: not written (a write's expiry is future)
    unverified: int = 0  # stored as an agent's, unverified
    verified: int = 0  # agent-sourced ones a person vouched for after writing them (JWT)
    lost_verification: int = 0  # verified in the file, unverified here (a Mind Key cannot vouch)
    key_id: str | None = None  # the short-lived Mind Key that wrote the agent-sourced ones (revoked)
    errors: list[tuple[dict[str, Any], BatchResult]] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Every record the import has dealt with, the skipped ones too."""
        return self.created + self.replaced + self.proposed + self.failed + self.skipped_expired


def chunks(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def is_persons(record: dict[str, Any]) -> bool:
    """A memory a person wrote and so vouched for (`source: user, verified: true`)."""
    return record.get("source") == "user" and record.get("verified") is True


def was_vouched(record: dict[str, Any]) -> bool:
    """An agent's memory a person verified (`source: agent, verified: true`)."""
    return record.get("source") != "user" and record.get("verified") is True


class Writers:
    """Who writes which record of an import, so trust stays what the file says.

    With a person's JWT: their own verified memories are written with the JWT (verified, as them);
    every other record (an agent's, or another tool's, which carries no `source`) through a Mind Key
    made for this import with only the `write` scope, so it arrives `source: agent, verified: false`,
    attributed to that key in its revisions and the mind's audit (key.created / key.revoked). The key
    is made on the first such record and revoked by `close`, also when the import fails. With `verify`
    every agent-sourced one is then verified with the JWT (`POST /memory/{id}/verify`: `verified_by`
    is the person; its revision says so). Without it, even an agent's memory verified in the file
    arrives unverified: whoever verified it there is not the person importing, who must say so.
    With a Mind Key everything is written with it and nothing can be verified.

    Why a key rather than a server flag: a write with a JWT is a person's by definition (SPEC §1), and
    the only credential whose writes are an agent's is a Mind Key; no server change needed.
    """

    def __init__(self, client: Synapse, verify: bool, label: str) -> None:
        self.person = client.credentials.token is not None
        if verify and not self.person:
            raise ValueError("--verify needs a person's JWT (--token): a Mind Key cannot vouch for memories")
        self.client, self.verify, self.label = client, verify, label
        self.agent: Synapse | None = None if self.person else client
        self.key_id: str | None = None
        self.mind_id: str | None = None

    def writer(self, record: dict[str, Any]) -> Synapse:
        return self.client if (not self.person or is_persons(record)) else self.agent_client()

    def agent_client(self) -> Synapse:
        if self.agent is None:
            self.mind_id = self.client.mind_id or self.only_mind()
            made = self.client.create_key(self.mind_id, label=self.label, scopes=["write"])
            assert made.key is not None  # a new key's secret comes this once
            self.key_id = made.id
            self.agent = self.client.with_mind_key(made.key)
        return self.agent

    def only_mind(self) -> str:
        minds = list(self.client.iter_minds())
        if len(minds) != 1:
            raise SynapseError(
                "This import needs a mind: pass mind_id=… (or set SYNAPSE_MIND_ID).", code="mind_id_required"
            )
        return minds[0].id

    def to_verify(self, record: dict[str, Any]) -> bool:
        return self.person and self.verify and not is_persons(record)

    def close(self) -> None:
        if self.key_id is not None and self.agent is not None:
            self.agent.close()
            self.client.revoke_key(self.key_id, self.mind_id)


def import_records(
    client: Synapse,
    records: Iterable[dict[str, Any]],
    progress: Progress | None = None,
    parallel: int = PARALLEL,
    *,
    verify: bool = False,
    key_label: str | None = None,
) -> ImportReport:
    """Store `records` (exported memories, or an importer's) in the client's mind, 100 per batch
    request, `parallel` requests at a time (a file naming one (category, key) twice needs
    `parallel=1` for the last to win), keeping trust honest (see `Writers`): an import never makes
    an agent's memory a verified one unless `verify` (a person's JWT only) says the person vouches.
    A record already expired (by this machine's clock) is skipped and counted in `skipped_expired`.
    ValueError when `verify` comes with a Mind Key."""
    report = ImportReport()
    run = uuid.uuid4().hex  # one Idempotency-Key per chunk and run: a retried chunk applies once
    label = key_label or f"import {datetime.now(UTC):%Y-%m-%d %H:%M}"
    writers = Writers(client, verify, label)
    lock = threading.Lock()  # the first chunks in flight must make one key between them

    def unexpired(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for record in records:
            if has_expired(record, datetime.now(UTC)):
                report.skipped_expired += 1  # read here, on the calling thread only
                continue
            yield record

    def send(number: int, chunk: list[dict[str, Any]]) -> list[Sent]:
        groups: dict[int, tuple[Synapse, list[int]]] = {}
        for index, record in enumerate(chunk):
            with lock:
                writer = writers.writer(record)
            groups.setdefault(id(writer), (writer, []))[1].append(index)
        sent = []
        for part, (writer, indexes) in enumerate(groups.values()):
            bodies = [write_body(chunk[i]) for i in indexes]
            answer = writer.remember_batch(bodies, idempotency_key=f"import-{run}-{number}-{part}")
            sent.append(Sent([chunk[i] for i in indexes], answer, writer is not client or not writers.person))
        return sent

    def tally(sent: list[Sent]) -> None:
        for part in sent:
            tally_part(part)
        if progress is not None:
            progress(report.total)

    def tally_part(part: Sent) -> None:
        answer = part.answer
        report.errors.extend((part.records[r.index], r) for r in answer.results if r.status == "error")
        report.created += answer.summary.created
        report.replaced += answer.summary.replaced
        report.proposed += answer.summary.proposed
        report.failed += answer.summary.failed
        if not part.as_agent:
            return
        for result in answer.results:
            if result.status not in ("created", "replaced") or result.memory is None:
                continue
            record = part.records[result.index]
            if writers.to_verify(record):
                client.verify(result.memory.id)
                report.verified += 1
                continue
            report.unverified += 1
            if is_persons(record) or was_vouched(record):
                report.lost_verification += 1

    try:
        with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="synapse-import") as pool:
            in_flight: deque[Future[list[Sent]]] = deque()
            for number, chunk in enumerate(chunks(unexpired(records))):
                in_flight.append(pool.submit(send, number, chunk))
                if len(in_flight) >= max(1, parallel):  # read ahead no further than the requests in flight
                    tally(in_flight.popleft().result())
            while in_flight:
                tally(in_flight.popleft().result())
    finally:
        report.key_id = writers.key_id
        writers.close()
    return report


@dataclass
class Sent:
    """One batch request of an import: the records it carried, the answer, and whether an agent's
    credential wrote them."""

    records: list[dict[str, Any]]
    answer: BatchAnswer
    as_agent: bool
