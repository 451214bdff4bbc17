"""Export a mind to JSON Lines and import such a file into a mind: backups and migrations.

Export writes every memory (expired ones too) with all its fields, one JSON object per line,
following `next_cursor` to the end. Import stores them with `POST /memory/batch`, 100 per request,
keyed by (category, key): importing a file twice replaces rather than duplicates. What a mind
assigns itself (id, version, timestamps, source, verification) is the importing mind's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from synapse_client.client import Synapse
from synapse_client.models import BatchResult

CHUNK = 100  # POST /memory/batch takes at most 100 memories
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


def import_records(
    client: Synapse, records: Iterable[dict[str, Any]], progress: Progress | None = None
) -> ImportReport:
    """Store `records` (exported memories) in the client's mind, 100 per batch request."""
    report = ImportReport()
    run = uuid.uuid4().hex  # one Idempotency-Key per chunk and run: a retried chunk applies once
    chunk: list[dict[str, Any]] = []
    sent = 0

    def flush() -> None:
        nonlocal sent
        answer = client.remember_batch(
            [write_body(r) for r in chunk], idempotency_key=f"import-{run}-{sent // CHUNK}"
        )
        for result in answer.results:
            if result.status == "error":
                report.errors.append((chunk[result.index], result))
        report.created += answer.summary.created
        report.replaced += answer.summary.replaced
        report.proposed += answer.summary.proposed
        report.failed += answer.summary.failed
        sent += len(chunk)
        chunk.clear()
        if progress is not None:
            progress(sent)

    for record in records:
        chunk.append(record)
        if len(chunk) == CHUNK:
            flush()
    if chunk:
        flush()
    return report
