"""The indexer's work: a DynamoDB stream batch → one published generation per mind."""

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

from synapse.core import observability
from synapse.core.observability import in_this_invocation, logger, metrics
from synapse.core.settings import get_settings
from synapse.index import deferred, generations, orphans, vectors
from synapse.index.documents import Change, Doc, Unindexable
from synapse.index.writer import Writer
from synapse.memory import expiry
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


def mind_of(record: dict[str, Any], base: Path | None = None) -> str | None:
    """The mind of a memory record (None for other items, and for records staging will fail)."""
    try:
        keys = tables.load((record.get("dynamodb") or {}).get("Keys") or {})
        mind_id = keys.get("pk")
        if not is_memory_item(keys) or not isinstance(mind_id, str) or expiry.is_sweep_record(record):
            return None
        generations.mind_dir(mind_id, base)  # refuses an id that is no folder name
    except (Unindexable, TypeError, ValueError, AttributeError):
        return None
    return mind_id


class StreamBatch:
    """Records of many minds staged one after another, every mind's writer held until `publish`: how
    the benches build an index through the record path (the indexer's batch is `index_stream`).

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
        return mind_of(record, self.base)

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


# A mind's records of a batch, each with its position in the batch.
Positioned = list[tuple[int, dict[str, Any]]]


class MindResult(NamedTuple):
    """What one mind's share of a batch did: the positions (in the batch) of its records that
    failed, the changes it applied and whether it published a generation."""

    failed: list[int]
    applied: int
    published: bool


def _failed_sequence(record: dict[str, Any]) -> str:
    return str((record.get("dynamodb") or {}).get("SequenceNumber"))


def _apply_records(writer: Writer, records: Positioned) -> list[int]:
    """Apply a mind's records in stream order; the positions of those that raised (each is logged)."""
    failed = []
    for position, record in records:
        try:
            change = change_from_record(record)
            if change is not None:
                writer.apply(change)
        except Exception:
            logger.exception("indexer: a stream record failed", extra={"event_id": record.get("eventID")})
            failed.append(position)
    return failed


def index_mind(writer: Writer, records: Positioned) -> MindResult:
    """One mind's records of a batch, under its writer lock, as one published transaction.

    A mind that no longer exists (checked when the batch removes memories of it, or before its first
    generation is created, so a late replay never resurrects a deleted mind's index) has its index
    files removed and its records skipped. If the mind cannot be written or published, its records
    are all reported as failed: nothing of them was published, and the other minds are unaffected.
    """
    removing = any(record.get("eventName") == "REMOVE" for _, record in records)
    try:
        with writer:
            gone = (removing or not writer.indexed) and not orphans.mind_exists(writer.mind_id)
            if not gone:
                failed = _apply_records(writer, records)
                published = writer.publish() is not None
                if writer.vectors_deferred:  # published without them: `fill_pending` brings them
                    deferred.note(writer.mind_id, writer.base)
        if gone:  # after the lock is let go, as every remover does
            orphans.remove_after_writer(writer.mind_id, writer.base)
            return MindResult([], 0, False)
    except Exception:
        logger.exception("indexer: a mind's batch failed", extra={"mind_id": writer.mind_id})
        return MindResult([position for position, _ in records], 0, False)
    return MindResult(failed, writer.changed if published else 0, published)


def _by_mind(records: list[dict[str, Any]], base: Path | None) -> tuple[dict[str, Positioned], list[int]]:
    """Each mind's records with their positions, in stream order; and the positions of records of no
    mind that fail (a record of no mind that is not indexed, such as a tag copy, is skipped)."""
    minds: dict[str, Positioned] = {}
    failed = []
    for position, record in enumerate(records):
        mind_id = mind_of(record, base)
        if mind_id is not None:
            minds.setdefault(mind_id, []).append((position, record))
            continue
        try:
            change_from_record(record)
        except Exception:
            logger.exception("indexer: a stream record failed", extra={"event_id": record.get("eventID")})
            failed.append(position)
    return minds, failed


def index_stream(event: dict[str, Any], base: Path | None = None) -> dict[str, Any]:
    """The indexer: apply a stream batch, one transaction and one publish per mind, report the
    records that failed.

    Minds are written at once, up to `index_writers` of them (threads: a mind's work is mostly EFS
    round trips, and SQLite lets go of the GIL while it waits), each holding only its own writer
    lock, so no two batches can wait on each other in a cycle; each thread runs in the invocation's
    logger keys and trace (`in_this_invocation`). A model that cannot embed costs no rows: they are
    published without vectors, which a later batch fills in once it loads (`deferred`). Records that
    cannot be applied, and every record of a mind that could not be published, are reported
    (`batchItemFailures`, Lambda's partial batch response) so Lambda retries from the first of them
    and finally hands them to the on-failure destination; retrying is safe because applying is
    idempotent.
    """
    records = event.get("Records") or []
    minds, failed = _by_mind(records, base)
    with vectors.embedded_ahead(_texts(minds)):
        return _index_minds(records, minds, failed, base)


def _texts(minds: dict[str, Positioned]) -> list[str]:
    """What the batch's upserts embed, in the order the minds are written (a record that cannot be
    read is left to its mind's apply). An update that leaves the text alone (a priority, an expiry)
    is not embedded: its mind reuses the vector it has for that text."""
    texts = []
    for mind_id in sorted(minds):
        for _, record in minds[mind_id]:
            try:
                change = change_from_record(record)
            except Unindexable:
                continue
            if change is None or change.doc is None:
                continue
            text = _embedded_text(change.doc)
            if text != _old_text(record):
                texts.append(text)
    return texts


def _embedded_text(doc: Doc) -> str:
    return vectors.embedded_text(doc.key, doc.content, ", ".join(doc.tags))


def _old_text(record: dict[str, Any]) -> str | None:
    """What the image before an update embedded (None: no such image, or not one that reads)."""
    body = record.get("dynamodb") or {}
    if record.get("eventName") != "MODIFY" or not body.get("OldImage"):
        return None
    try:
        return _embedded_text(Doc.from_item(_load(body, "OldImage")))
    except Unindexable:
        return None


def _index_minds(
    records: list[dict[str, Any]], minds: dict[str, Positioned], failed: list[int], base: Path | None
) -> dict[str, Any]:
    """`index_stream`'s part after the records are sorted by mind."""
    # Writers made in sorted mind order: the order in which their locks are asked for.
    work = [(Writer(mind_id, base), minds[mind_id]) for mind_id in sorted(minds)]
    results: list[MindResult] = []
    workers = min(get_settings().index_writers, len(work))
    if workers <= 1:  # one mind (or one writer allowed): on this thread, no pool to start
        results = [index_mind(writer, mind_records) for writer, mind_records in work]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="index") as pool:
            tasks = [
                pool.submit(in_this_invocation(index_mind), writer, mind_records)
                for writer, mind_records in work
            ]
            results = [task.result() for task in tasks]
    for result in results:
        failed.extend(result.failed)
    if not any(writer.vectors_deferred for writer, _ in work):  # the model works: it may fill in
        fill_pending(base)  # what a broken model left without vectors
    metrics.add_metric(
        name="IndexChangesApplied", unit=observability.COUNT, value=sum(r.applied for r in results)
    )
    metrics.add_metric(
        name="IndexGenerationsPublished", unit=observability.COUNT, value=sum(r.published for r in results)
    )
    return {"batchItemFailures": [{"itemIdentifier": _failed_sequence(records[n])} for n in sorted(failed)]}


def fill_pending(
    base: Path | None = None,
    limit: int = deferred.MINDS_PER_BATCH,
    out_of_time: Callable[[], bool] = lambda: False,
) -> int:
    """Fill in the vectors of up to `limit` marked minds (a publish of each: the writer's `fill`);
    returns how many vectors were written. Stops at the first mind the model still fails for."""
    written = 0
    for mind_id in deferred.pending(base, limit):
        if out_of_time():
            break
        if generations.current_generation(generations.mind_dir(mind_id, base)) is None:
            deferred.clear(mind_id, base)  # the mind's index is gone (the mind deleted): nothing to fill
            continue
        try:
            with Writer(mind_id, base) as writer:
                writer.publish()
        except Exception:  # the next batch, or the next sweep, tries again
            logger.exception("filling in deferred vectors failed", extra={"mind_id": mind_id})
            break
        written += writer.embedded
        if writer.vectors_deferred:
            break  # the model still fails: the marker stays
        if writer.vectors_complete:
            deferred.clear(mind_id, base)
    return written
