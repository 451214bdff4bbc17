"""A local stand-in for Lambda's DynamoDB stream event source mapping.

It follows every shard of the Memories table's stream (DescribeStream / GetShardIterator /
GetRecords on the same endpoint as the table: DynamoDB Local or the embedded moto server), and invokes every
handler template.yaml subscribes to it (the functions with a DynamoDB event: the search indexer,
the webhook event producer) with the records it read, once for all, with Lambda's event shape, in
batches, and only the records its event's FilterCriteria admit, as Lambda filters them (so a record
a filter leaves out locally is one AWS leaves out too). Like the real mapping it retries a batch
from its first reported failure, a bounded number of times, then gives the records up (logged,
where AWS would send them to SQS).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from infra import template
from infra.gateway import LambdaContext, load_handler
from infra.local_dynamo import client_config

log = logging.getLogger("synapse.stream_pump")

POLL_SECONDS = 0.3
BATCH_SIZE = 100
MAX_ATTEMPTS = 3
READ_LIMIT = 1000  # GetRecords' Limit
DISCOVER_SECONDS = 10.0  # shards are listed again this often, and at once when one closes
LANE_BACKLOG = 64  # polls a function may fall behind before the reader waits for it

Handler = Callable[[dict[str, Any], Any], Any]


def stream_functions() -> dict[str, tuple[Path, str]]:
    """CodeUri and Handler of every function template.yaml subscribes to the table's stream."""
    found = {}
    for name, resource in template.resources("AWS::Serverless::Function").items():
        events = (resource["Properties"].get("Events") or {}).values()
        if any(event["Type"] == "DynamoDB" for event in events):
            handler = (
                resource["Properties"].get("Handler") or template.load()["Globals"]["Function"]["Handler"]
            )
            found[name] = (template.ROOT / resource["Properties"]["CodeUri"], str(handler))
    if not found:
        raise LookupError("template.yaml has no function with a DynamoDB stream event")
    return found


def stream_filters(function: str) -> list[dict[str, Any]]:
    """The FilterCriteria patterns of the function's DynamoDB event (none: it takes every record)."""
    resource = template.resources("AWS::Serverless::Function")[function]
    for event in (resource["Properties"].get("Events") or {}).values():
        if event["Type"] == "DynamoDB":
            filters = (event["Properties"].get("FilterCriteria") or {}).get("Filters") or []
            return [json.loads(entry["Pattern"]) for entry in filters]
    raise LookupError(f"{function} has no DynamoDB stream event")


def _matches(pattern: Any, value: Any) -> bool:
    """Lambda's event filtering for what template.yaml uses: nested keys, and a list of exact values
    or `{"prefix": …}` that any one may match."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(_matches(p, value.get(k)) for k, p in pattern.items())
    return any(
        (isinstance(choice, dict) and isinstance(value, str) and value.startswith(choice["prefix"]))
        or choice == value
        for choice in pattern
    )


def admitted(record: dict[str, Any], patterns: list[dict[str, Any]]) -> bool:
    """Whether Lambda hands the record to a function with these filters (any one pattern matching)."""
    return not patterns or any(_matches(pattern, record) for pattern in patterns)


def indexer_function() -> tuple[Path, str]:
    """CodeUri and Handler of the search indexer."""
    return stream_functions()["IndexerFunction"]


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """GetRecords' record → the record Lambda hands a function (epoch seconds, eventSourceARN)."""
    body = dict(record["dynamodb"])
    moment = body.get("ApproximateCreationDateTime")
    if isinstance(moment, datetime):
        body["ApproximateCreationDateTime"] = int(moment.timestamp())
    elif isinstance(moment, float):  # read as JSON (`motofix.InProcessStreams`)
        body["ApproximateCreationDateTime"] = int(moment)
    return {**record, "dynamodb": body, "eventVersion": "1.1", "eventSourceARN": stream_arn}


class StreamReader:
    """Reads each shard of a table's stream from its trim horizon, remembering where it got to.

    DynamoDB Local hands out a TRIM_HORIZON iterator on an empty shard that its first record then
    invalidates (TrimmedDataAccessException) when other tables' writes took the sequence numbers in
    between; an expired iterator fails likewise. Either way the reader asks again for an iterator
    after the last record it read (or at the trim horizon if it read none) and goes on.
    """

    RESTART_ERRORS = frozenset({"TrimmedDataAccessException", "ExpiredIteratorException"})

    def __init__(self, dynamodb: Any, streams: Any, table_name: str) -> None:
        self.dynamodb = dynamodb
        self.streams = streams
        self.table_name = table_name
        self.stream_arn: str | None = None
        self.iterators: dict[str, str | None] = {}
        self.last_read: dict[str, str] = {}  # shard id -> sequence number of the last record read
        self._stale = True  # the shards are listed again before the next read
        self._discovered = 0.0

    def _discover(self) -> None:
        """List the stream's shards when a shard closed or DISCOVER_SECONDS passed: not on every poll
        (a DescribeStream each time was a third of a busy poll's calls to the embedded store)."""
        now = time.monotonic()
        if not self._stale and now - self._discovered < DISCOVER_SECONDS:
            return
        if self.stream_arn is None:
            self.stream_arn = self.dynamodb.describe_table(TableName=self.table_name)["Table"][
                "LatestStreamArn"
            ]
        shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        for shard in shards:
            if shard["ShardId"] not in self.iterators:
                self.iterators[shard["ShardId"]] = self._iterator(shard["ShardId"])
        self._stale, self._discovered = False, now

    def _iterator(self, shard_id: str) -> str:
        where: dict[str, str] = {"ShardIteratorType": "TRIM_HORIZON"}
        if shard_id in self.last_read:
            where = {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self.last_read[shard_id]}
        answer = self.streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard_id, **where)
        iterator: str = answer["ShardIterator"]
        return iterator

    def _read(self, shard_id: str, iterator: str) -> dict[str, Any]:
        try:
            answer: dict[str, Any] = self.streams.get_records(ShardIterator=iterator, Limit=READ_LIMIT)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in self.RESTART_ERRORS:
                raise
            answer = self.streams.get_records(ShardIterator=self._iterator(shard_id), Limit=READ_LIMIT)
        return answer

    def poll(self) -> list[dict[str, Any]]:
        """New records of every shard, in order within each shard, in Lambda's record shape.

        A shard is read until an answer is short of READ_LIMIT: no empty read to learn it is drained
        (an answer that stopped short at its size limit is followed by the next poll, at once)."""
        self._discover()
        assert self.stream_arn is not None
        records: list[dict[str, Any]] = []
        for shard_id, iterator in list(self.iterators.items()):
            while iterator is not None:
                answer = self._read(shard_id, iterator)
                iterator = answer.get("NextShardIterator")
                got = answer.get("Records") or []
                if got:
                    self.last_read[shard_id] = got[-1]["dynamodb"]["SequenceNumber"]
                records += [lambda_record(r, self.stream_arn) for r in got]
                if len(got) < READ_LIMIT:
                    break
            if iterator is None and self.iterators[shard_id] is not None:
                self._stale = True  # the shard closed: its children are listed at the next poll
            self.iterators[shard_id] = iterator
        return records


class Pump:
    """Delivers stream records to the indexer handler in batches, with Lambda's retry behaviour."""

    def __init__(
        self,
        reader: StreamReader,
        handler: Handler | None = None,
        name: str = "indexer",
        patterns: list[dict[str, Any]] | None = None,
    ) -> None:
        self.reader = reader
        self.handler = handler or load_handler(*indexer_function())
        self.name = name
        self.patterns = stream_filters("IndexerFunction") if patterns is None else patterns
        self.given_up: list[dict[str, Any]] = []

    @classmethod
    def connect(
        cls,
        table_name: str,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        function: str = "IndexerFunction",
    ) -> Pump:
        where = {"endpoint_url": endpoint_url, "region_name": region, "config": client_config()}
        dynamodb = boto3.client("dynamodb", **where)
        streams = boto3.client("dynamodbstreams", **where)
        handler = load_handler(*stream_functions()[function])
        return cls(StreamReader(dynamodb, streams, table_name), handler, function, stream_filters(function))

    def run_once(self) -> int:
        """Poll once and deliver everything found; returns how many records were read."""
        return self.take(self.reader.poll())

    def take(self, records: list[dict[str, Any]]) -> int:
        """Deliver what the function's filters admit of `records`, BATCH_SIZE at a time, as
        Lambda's mapping does; returns how many records there were."""
        wanted = [record for record in records if admitted(record, self.patterns)]
        for start in range(0, len(wanted), BATCH_SIZE):
            self.deliver(wanted[start : start + BATCH_SIZE])
        return len(records)

    def deliver(self, records: list[dict[str, Any]]) -> None:
        pending = records
        for _ in range(MAX_ATTEMPTS):
            try:
                answer = self.handler({"Records": pending}, LambdaContext(self.name)) or {}
            except Exception:
                log.exception("%s failed on a batch of %d records; retrying", self.name, len(pending))
                continue
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures") or []}
            if not failed:
                return
            first = min(i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failed)
            pending = pending[first:]
        self.given_up += pending
        log.error("%s gave up on %d stream records (AWS: the on-failure SQS queue)", self.name, len(pending))


def _deliver(pumps: list[Pump], records: list[dict[str, Any]]) -> None:
    for pump in pumps:
        try:
            pump.take(records)
        except Exception:
            log.exception("stream pump: delivering to %s failed; going on", pump.name)


class Lane:
    """One stream function's deliveries, on a thread of its own, in stream order.

    Each of Lambda's event source mappings polls for its function alone, so a slow function never
    holds another's records back; here the stream is read once for all (`start`) and each function
    takes what was read from its lane. Under load, what piled up while the function was busy is
    delivered together (BATCH_SIZE at a time), as a mapping that is behind invokes with full batches.
    On stop, a lane delivers what was read before it ends: nothing read is lost.
    """

    def __init__(self, pump: Pump) -> None:
        self.pump = pump
        self._queue: queue.Queue[list[dict[str, Any]] | None] = queue.Queue(maxsize=LANE_BACKLOG)
        self.thread = threading.Thread(target=self._run, name=f"stream-{pump.name}", daemon=True)
        self.thread.start()

    def put(self, records: list[dict[str, Any]]) -> None:
        """Queue a poll's records (waits while the function is LANE_BACKLOG polls behind)."""
        self._queue.put(records)

    def close(self) -> None:
        """Deliver what is queued, then end."""
        self._queue.put(None)
        self.thread.join()

    def _run(self) -> None:
        ending = False
        while not ending:
            records = self._queue.get()
            if records is None:
                return
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    ending = True
                    break
                records = records + more
            _deliver([self.pump], records)


def start(endpoint_url: str, table_name: str, stop: threading.Event, streams: Any = None) -> threading.Thread:
    """Read the stream in a daemon thread until `stop` is set, each stream function fed from its own
    `Lane`: a stored memory is searchable, and its webhook events queued, in well under a second.

    The stream is read once for all of them (each GetRecords of the embedded store costs CPU the
    requests need): every function is handed the same records, each through its own filters. A
    poll that found records is followed by the next at once, as Lambda keeps invoking while a
    shard has records (MaximumBatchingWindowInSeconds 0); an idle stream is polled every
    POLL_SECONDS. The thread returned ends once every lane has delivered what was read. `streams`:
    the DynamoDB Streams calls answered otherwise than by a client of the endpoint (the embedded
    moto, in-process: `motofix.InProcessStreams`)."""
    where = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "config": client_config()}
    reader = StreamReader(
        boto3.client("dynamodb", **where), streams or boto3.client("dynamodbstreams", **where), table_name
    )
    pumps = [
        Pump(reader, load_handler(*code), name, stream_filters(name))
        for name, code in stream_functions().items()
    ]
    # What is in the stream already is the restored snapshot (its items come back as INSERTs) or, on
    # an external endpoint, history. The indexer takes it (idempotent, and it catches up with what a
    # crash left unindexed); every other function starts after it: a restart is not a write, and
    # must not announce every memory to webhooks again. Read here, before the first request is served;
    # the indexer is handed it on its lane.
    try:
        backlog: list[dict[str, Any]] | None = reader.poll()
    except Exception:
        log.exception("stream pump: could not read the backlog; every function will replay it")
        backlog = None

    def loop() -> None:
        lanes = [Lane(pump) for pump in pumps]
        for lane in lanes:
            if lane.pump.name == "IndexerFunction" and backlog:
                lane.put(backlog)
        try:
            _read(reader, lanes, stop)
        finally:
            for lane in lanes:
                lane.close()

    thread = threading.Thread(target=loop, name="stream-pump", daemon=True)
    thread.start()
    return thread


def _read(reader: StreamReader, lanes: list[Lane], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            records = reader.poll()
        except Exception:
            log.exception("stream pump: reading the stream failed; trying again")
            records = []
        if records:
            for lane in lanes:
                lane.put(records)
        else:
            stop.wait(POLL_SECONDS)
