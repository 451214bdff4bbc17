"""Export a mind to JSON Lines and import such a file into a mind: backups and migrations.

Export writes every memory (expired ones too) with all its fields, one JSON object per line,
following `next_cursor` to the end. Import stores them with `POST /memory/batch`, 100 per request
(`parallel` requests at a time, one by default), keyed by (category, key): importing a file twice
replaces rather than duplicates. What a mind assigns itself (id, version, timestamps, source,
verification) is the importing mind's.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

from synapse_client.client import Synapse
from synapse_client.models import BatchAnswer, BatchResult

CHUNK = 100  # POST /memory/batch takes at most 100 memories
# Batch requests in flight at once. One by default: 4 at once was slower on make run (283 s → 401 s
# for 5,000 memories; bench/export_import.py), where runner and DynamoDB Local share the CPUs.
PARALLEL = 1
WRITE_FIELDS = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")

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
        yield record


@dataclass
class ImportReport:
    created: int = 0
    replaced: int = 0
    proposed: int = 0
    failed: int = 0
    errors: list[tuple[dict[str, Any], BatchResult]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.created + self.replaced + self.proposed + self.failed


def chunks(records: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for record in records:
        chunk.append(record)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def import_records(
    client: Synapse,
    records: Iterable[dict[str, Any]],
    progress: Progress | None = None,
    parallel: int = PARALLEL,
) -> ImportReport:
    """Store `records` (exported memories) in the client's mind, 100 per batch request, `parallel`
    requests at a time (a file naming one (category, key) twice needs `parallel=1` for the last to
    win)."""
    report = ImportReport()
    run = uuid.uuid4().hex  # one Idempotency-Key per chunk and run: a retried chunk applies once

    def send(number: int, chunk: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], BatchAnswer]:
        bodies = [write_body(r) for r in chunk]
        return chunk, client.remember_batch(bodies, idempotency_key=f"import-{run}-{number}")

    def tally(chunk: list[dict[str, Any]], answer: BatchAnswer) -> None:
        report.errors.extend((chunk[r.index], r) for r in answer.results if r.status == "error")
        report.created += answer.summary.created
        report.replaced += answer.summary.replaced
        report.proposed += answer.summary.proposed
        report.failed += answer.summary.failed
        if progress is not None:
            progress(report.total)

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="synapse-import") as pool:
        in_flight: deque[Future[tuple[list[dict[str, Any]], BatchAnswer]]] = deque()
        for number, chunk in enumerate(chunks(records)):
            in_flight.append(pool.submit(send, number, chunk))
            if len(in_flight) >= max(1, parallel):  # read ahead no further than the requests in flight
                tally(*in_flight.popleft().result())
        while in_flight:
            tally(*in_flight.popleft().result())
    return report
