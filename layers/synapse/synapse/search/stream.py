"""The indexer's work: a DynamoDB stream batch → one published generation per mind."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from synapse.core.observability import logger, metrics
from synapse.memory import expiry
from synapse.search import generations, orphans
from synapse.search.documents import Change, Doc, Unindexable
from synapse.search.writer import Writer
from synapse.storage import tables


def is_memory_item(keys: dict[str, Any]) -> bool:
    """Only the memory items are indexed; id pointers and tag copies are not."""
    sort_key = keys.get("sk")
    return isinstance(sort_key, str) and sort_key.startswith(tables.MEMORY_PREFIX)


def _load(body: dict[str, Any], part: str) -> dict[str, Any]:
    try:
        return tables.load(body.get(part) or {})
    except (TypeError, ValueError, AttributeError) as error:
        raise Unindexable(f"unreadable {part}: {error!r}") from None


def change_from_record(record: dict[str, Any]) -> Change | None:
    """A DynamoDB stream record (Lambda's event shape) → its change to the index; None if not indexed."""
    body = record.get("dynamodb") or {}
    keys = _load(body, "Keys")
    if not is_memory_item(keys) or expiry.is_sweep_record(record):
        return None  # the expiry sweep changes no indexed field and keeps the version
    name = record.get("eventName")
    image_name = "OldImage" if name == "REMOVE" else "NewImage"
    if name not in {"INSERT", "MODIFY", "REMOVE"} or not body.get(image_name):
        raise Unindexable(f"{name!r} record without {image_name}")
    item = _load(body, image_name)
    if item.get("pk") != keys.get("pk"):
        raise Unindexable("image and keys disagree on the mind")
    change = Change.removal(item) if name == "REMOVE" else Change.upsert(Doc.from_item(item))
    generations.mind_dir(change.mind_id)  # refuses an id that is not safe as a folder name
    return change


class StreamBatch:
    """One invocation's records: a writer per mind, one published generation per mind.

    A mind that no longer exists (its mind item is gone, so it is being or has been deleted) has
    its index files removed and its records skipped: that is how deleting a mind deletes its index.
    It is checked when the batch removes memories of that mind, or before a first generation is
    created, so a late replay never resurrects a deleted mind's index.
    """

    def __init__(self, base: Path | None = None) -> None:
        self.base = base
        self.writers: dict[str, Writer] = {}
        self.gone: set[str] = set()
        self._stack = contextlib.ExitStack()

    def _mind_of(self, record: dict[str, Any]) -> str | None:
        """The mind of a memory record (None for other items, and for records staging will fail)."""
        try:
            keys = tables.load((record.get("dynamodb") or {}).get("Keys") or {})
            mind_id = keys.get("pk")
            if not is_memory_item(keys) or not isinstance(mind_id, str) or expiry.is_sweep_record(record):
                return None
            generations.mind_dir(mind_id, self.base)  # refuses an id that is no folder name
        except (Unindexable, TypeError, ValueError, AttributeError):
            return None
        return mind_id

    def prepare(self, records: Iterable[dict[str, Any]]) -> None:
        """Drop minds that are gone, then take every remaining mind's writer lock in sorted order:
        one global order, so concurrent batches sharing minds (ParallelizationFactor > 1, or a mind
        split across shards) can never wait on each other in a cycle."""
        minds: set[str] = set()
        removing: set[str] = set()
        for record in records:
            if (mind_id := self._mind_of(record)) is not None:
                minds.add(mind_id)
                if record.get("eventName") == "REMOVE":
                    removing.add(mind_id)
        for mind_id in sorted(minds):
            unindexed = generations.current_generation(generations.mind_dir(mind_id, self.base)) is None
            if (mind_id in removing or unindexed) and not orphans.mind_exists(mind_id):
                self.gone.add(mind_id)
                orphans.remove_after_writer(mind_id, self.base)
        for mind_id in sorted(minds - self.gone):
            self._writer(mind_id)

    def _writer(self, mind_id: str) -> Writer:
        writer = self.writers.get(mind_id)
        if writer is None:
            writer = self._stack.enter_context(Writer(mind_id, self.base))
            self.writers[mind_id] = writer
        return writer

    def stage(self, record: dict[str, Any]) -> bool:
        """Apply one record to its mind's next generation; raises for a record that cannot be applied."""
        change = change_from_record(record)
        if change is None or change.mind_id in self.gone:
            return False
        return self._writer(change.mind_id).apply(change)

    def publish(self) -> dict[str, Path | None]:
        return {mind_id: writer.publish() for mind_id, writer in self.writers.items()}

    def close(self) -> None:
        self._stack.close()
        self.writers.clear()


def _stage_all(batch: StreamBatch, records: list[dict[str, Any]]) -> list[str]:
    """Stage every record; the sequence numbers of those that raised (each is logged)."""
    failed = []
    for record in records:
        try:
            batch.stage(record)
        except Exception:
            logger.exception("indexer: a stream record failed", extra={"event_id": record.get("eventID")})
            failed.append(str((record.get("dynamodb") or {}).get("SequenceNumber")))
    return failed


def index_stream(event: dict[str, Any]) -> dict[str, Any]:
    """The indexer: apply a stream batch, publish once per mind, report the records that failed.

    Records that cannot be applied are reported (`batchItemFailures`, Lambda's partial batch
    response: every record is tried, as powertools' BatchProcessor did, without its import cost) so
    Lambda retries from them and finally hands them to the on-failure destination; a failure to
    publish fails the whole batch, which is safe to retry because applying is idempotent.
    """
    batch = StreamBatch()
    records = event.get("Records") or []
    try:
        batch.prepare(records)
        failed = _stage_all(batch, records)
        published = batch.publish()
        applied = sum(writer.changed for writer in batch.writers.values())
    finally:
        batch.close()
    metrics.add_metric(name="IndexChangesApplied", unit=MetricUnit.Count, value=applied)
    metrics.add_metric(
        name="IndexGenerationsPublished", unit=MetricUnit.Count, value=sum(map(bool, published.values()))
    )
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}
