"""Getting webhook events to receivers: fan-out to a queue, signed POSTs, retries, a delivery log.

Producers (the stream consumer, the hourly `memory.expiring` run) only enqueue one message per
(subscription, event), so a slow or dead receiver never slows a write. The delivery function takes
each message on its own and POSTs it to an address the URL guard has just approved (the connection
is pinned to that address; Host header and TLS SNI keep the name), with a 5 s timeout.

A failure is retried by sending the message again with a delay drawn from an exponential backoff
with jitter: half the ceiling plus a random share of the other half, the ceiling doubling from 30 s
to about 4 h: waits never shrink before the cap, then stay between 2 and 4 h. SQS delays stop at 15 min, so a
longer wait hops: the message comes back early, sees its `not_before`, and goes round again. After
24 hours of failing the event goes to the dead-letter queue. Every attempt is logged under the
mind (`DELIVERY#…`, kept 7 days) for `GET …/webhooks/{id}/deliveries`.

The queue is SQS in AWS. The local runner and tests install an in-process stand-in with the same
semantics (`install_queue`, see `infra/local_queue.py`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import random
import secrets
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, Protocol

import boto3
from aws_lambda_powertools.metrics import MetricUnit

from synapse.core import clock
from synapse.core.observability import logger, metrics
from synapse.core.settings import get_settings
from synapse.memory import events, reads
from synapse.storage import tables
from synapse.webhooks import signing, ssrf
from synapse.webhooks import subscriptions as webhooks

TIMEOUT_SECONDS = 5.0
BASE_DELAY_SECONDS = 30
MAX_DELAY_SECONDS = (
    BASE_DELAY_SECONDS << 9
)  # 4 h 16 min: a power of two times the base, so waits never shrink
GIVE_UP_AFTER = timedelta(hours=24)
SQS_MAX_DELAY_SECONDS = 900
KEEP_LOG = timedelta(days=7)
EXPIRING_AHEAD = timedelta(hours=24)
USER_AGENT = "Synapse-Webhooks/1"
_RESPONSE_PEEK_BYTES = 4096

# ---------------------------------------------------------------- the retry schedule


def backoff_seconds(failed_attempt: int, rng: random.Random | None = None) -> int:
    """Seconds to wait after attempt `failed_attempt` (1-based) failed: exponential, with jitter."""
    ceiling = min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS << max(0, min(failed_attempt - 1, 20)))
    half = ceiling // 2
    jitter: int = (rng or random.SystemRandom()).randint(0, ceiling - half)
    return half + jitter


# ---------------------------------------------------------------- the queue


class Queue(Protocol):
    def send(self, body: str, delay_seconds: int) -> None: ...

    def dead_letter(self, body: str) -> None: ...


class SqsQueue:
    """The delivery queue and its dead-letter queue in AWS."""

    def __init__(self, queue_url: str, dead_letter_url: str) -> None:
        self.queue_url = queue_url
        self.dead_letter_url = dead_letter_url

    @staticmethod
    @cache
    def _client() -> Any:
        return boto3.client("sqs", region_name=get_settings().region)

    def send(self, body: str, delay_seconds: int) -> None:
        if not self.queue_url:
            raise RuntimeError("SYNAPSE_WEBHOOK_QUEUE_URL is not set and no local queue is installed")
        delay = max(0, min(SQS_MAX_DELAY_SECONDS, delay_seconds))
        self._client().send_message(QueueUrl=self.queue_url, MessageBody=body, DelaySeconds=delay)

    def dead_letter(self, body: str) -> None:
        self._client().send_message(QueueUrl=self.dead_letter_url or self.queue_url, MessageBody=body)


_installed: Queue | None = None


def install_queue(queue: Queue | None) -> None:
    """Use an in-process queue instead of SQS (the local runner and tests); None goes back to SQS."""
    global _installed
    _installed = queue


def queue() -> Queue:
    if _installed is not None:
        return _installed
    settings = get_settings()
    return SqsQueue(settings.webhook_queue_url, settings.webhook_dead_letter_url)


def _message(subscription_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "subscription_id": subscription_id,
        "mind_id": payload["mind_id"],
        "event": payload,
        "attempt": 1,
        "first_attempt_at": None,
        "not_before": None,
    }


def _enqueue(change: events.Change, subscriptions: Iterable[webhooks.Subscription]) -> int:
    sent = 0
    target = queue()
    for subscription in subscriptions:
        if subscription.wants(change.type):
            message = _message(subscription.id, change.payload(subscription.id))
            target.send(json.dumps(message, ensure_ascii=False, separators=(",", ":")), 0)
            sent += 1
    return sent


# ---------------------------------------------------------------- producers


def publish_stream(records: list[dict[str, Any]]) -> list[str]:
    """Enqueue the events of a batch of Memories stream records, in order.

    Returns the sequence number of the first record that failed (Lambda retries the batch from
    there; the event ids are stable, so a receiver can drop what it already got), or nothing.
    """
    found: dict[str, list[webhooks.Subscription]] = {}
    checked_alive: set[str] = set()
    queued = 0
    for record in records:
        try:
            for change in events.from_stream_record(record):
                if change.mind_id not in found:
                    found[change.mind_id] = webhooks.list_subscriptions(change.mind_id)
                subscriptions = found[change.mind_id]
                queued += _enqueue(change, subscriptions)
                if change.type == events.DELETED and subscriptions and change.mind_id not in checked_alive:
                    checked_alive.add(change.mind_id)
                    if tables.get(tables.minds_table(), tables.mind_key(change.mind_id)) is None:
                        webhooks.expire_orphans(change.mind_id, subscriptions, clock.now())
        except Exception:
            logger.exception(
                "webhook events: a stream record failed", extra={"event_id": record.get("eventID")}
            )
            metrics.add_metric(name="WebhookEventsQueued", unit=MetricUnit.Count, value=queued)
            return [str(record["dynamodb"]["SequenceNumber"])]
    metrics.add_metric(name="WebhookEventsQueued", unit=MetricUnit.Count, value=queued)
    return []


def publish_expiring(at: datetime | None = None) -> dict[str, int]:
    """memory.expiring, once per memory and expiry time, for memories expiring within 24 h.

    The minds come from the registry (no scan), each mind's memories from the `expiring` index.
    A conditional marker per (memory, expiry time) makes a second run, or an overlapping one, send
    nothing twice; a marker whose events could not be queued is released for the next run.
    """
    moment = at or clock.now()
    tally = {"minds": 0, "memories": 0, "messages": 0, "failed_minds": 0}
    for mind_id in webhooks.minds_wanting_expiring():
        try:
            subscriptions = [s for s in webhooks.list_subscriptions(mind_id) if s.wants(events.EXPIRING)]
            if not subscriptions:
                continue
            tally["minds"] += 1
            after: str | None = None
            while True:
                page = reads.expiring(mind_id, EXPIRING_AHEAD, reads.LIST_MAX, after, at=moment)
                for memory in page.memories:
                    assert memory.expires_at is not None
                    if not webhooks.claim_expiry(mind_id, memory.id, memory.expires_at):
                        continue
                    try:
                        change = events.expiring(mind_id, memory.public(moment), moment)
                        tally["messages"] += _enqueue(change, subscriptions)
                    except Exception:
                        webhooks.release_expiry(mind_id, memory.id, memory.expires_at)
                        raise
                    tally["memories"] += 1
                if not page.next_cursor:
                    break
                after = page.next_cursor
        except Exception:
            tally["failed_minds"] += 1
            logger.exception(
                "memory.expiring: a mind failed; the next run tries again", extra={"mind": mind_id}
            )
    return tally


# ---------------------------------------------------------------- one POST


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    status_code: int | None
    error: str | None
    latency_ms: int


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP(S) over a socket already connected to the checked address; Host and SNI keep the name."""

    def __init__(self, target: ssrf.Target, sock: socket.socket, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._pinned = sock
        self._tls = ssl.create_default_context() if target.scheme == "https" else None
        self.default_port = 443 if self._tls else 80

    def connect(self) -> None:
        sock = self._pinned
        if self._tls is not None:
            sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        self.sock = sock


def _connect(target: ssrf.Target, deadline: float) -> socket.socket:
    """A socket connected to the first address that takes it before `deadline` (monotonic)."""
    last: OSError | None = None
    for address in target.addresses:  # numeric addresses: no DNS lookup happens here
        left = deadline - time.monotonic()
        if left <= 0:  # many addresses that hang must not add up their timeouts
            raise last or TimeoutError("no address took the connection in time")
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(left)
        try:
            sock.connect((address, target.port))
        except OSError as error:
            sock.close()
            last = error
        else:
            return sock
    raise last or OSError("no address to connect to")


class _Deadline:
    """Shuts a connection's socket down once `seconds` have passed, whatever is blocked on it.

    A socket timeout bounds each read only: a receiver trickling a byte at a time would hold an
    attempt (and its Lambda) for ever. The shutdown goes through a duplicate of the socket's
    descriptor, held until `close`: TLS wraps (and detaches) the original, and a bare descriptor
    number could by then name another connection.
    """

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._handle = sock.dup()
        self._lock = threading.Lock()
        self._open = True
        self.expired = False
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        with self._lock:
            if not self._open:
                return
            self.expired = True
            with contextlib.suppress(OSError):  # the receiver may have hung up already
                self._handle.shutdown(socket.SHUT_RDWR)

    def close(self, *closing: socket.socket | http.client.HTTPConnection) -> None:
        with self._lock:
            self._open = False
            self._timer.cancel()
            for thing in (*closing, self._handle):
                thing.close()


def post(target: ssrf.Target, body: bytes, headers: dict[str, str], timeout: float = TIMEOUT_SECONDS) -> int:
    """POST `body` to the checked target (no redirects followed); the response status.

    `timeout` bounds the whole attempt, connecting included, not only each read (TimeoutError past it).
    """
    ends = time.monotonic() + timeout
    sock = _connect(target, ends)
    left = max(0.0, ends - time.monotonic())
    connection = _PinnedConnection(target, sock, left)
    deadline = _Deadline(sock, left)
    late = TimeoutError(f"no complete answer within {timeout:g} s")
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(_RESPONSE_PEEK_BYTES)
        status = response.status
    except (OSError, http.client.HTTPException) as error:
        if deadline.expired:
            raise late from error
        raise
    finally:
        deadline.close(connection, sock)
    if deadline.expired:  # cut short: what was read may be a truncated answer
        raise late
    return status


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError | socket.timeout):
        return f"timeout: no answer within {TIMEOUT_SECONDS:g} s"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ssl.SSLError):
        return f"TLS error: {error.__class__.__name__}"
    return f"{error.__class__.__name__}: {str(error)[:200]}"


def attempt(subscription: webhooks.Subscription, payload: dict[str, Any], at: datetime) -> Outcome:
    """Check the URL again (after DNS), sign, POST once. Never raises for the receiver's faults."""
    started = time.monotonic()

    def outcome(status: int | None, error: str | None) -> Outcome:
        delivered = status is not None and 200 <= status < 300
        return Outcome(delivered, status, error, int((time.monotonic() - started) * 1000))

    try:
        target = ssrf.check(subscription.url, get_settings().webhooks_allow_loopback)
    except ssrf.Refused as refused:
        return outcome(None, f"refused: url {refused.message}")
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.HEADER: signing.header_value([subscription.secret()], body, int(at.timestamp())),
        "Synapse-Event-Id": str(payload["id"]),
        "Synapse-Event-Type": str(payload["type"]),
    }
    try:
        status = post(target, body, headers)
    except (OSError, http.client.HTTPException) as error:
        return outcome(None, _describe(error))
    return outcome(status, None if 200 <= status < 300 else f"HTTP {status}")


# ---------------------------------------------------------------- the delivery log


def _log(
    subscription: webhooks.Subscription,
    payload: dict[str, Any],
    attempt_number: int,
    at: datetime,
    result: Outcome,
    state: str,
    next_retry_at: datetime | None,
) -> None:
    stamp = clock.to_iso(at)
    sk = f"{tables.DELIVERY_PREFIX}{subscription.id}#{stamp}#{payload['id']}#{attempt_number:04d}"
    item = {
        "pk": f"MIND#{subscription.mind_id}",
        "sk": sk,
        "webhook_id": subscription.id,
        "event_id": payload["id"],
        "event_type": payload["type"],
        "attempt": attempt_number,
        "attempted_at": stamp,
        "status_code": result.status_code,
        "error": result.error,
        "latency_ms": result.latency_ms,
        "state": state,
        "next_retry_at": clock.to_iso(next_retry_at) if next_retry_at else None,
        "ttl": int((at + KEEP_LOG).timestamp()),
    }
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))


_LOG_FIELDS = (
    "event_id",
    "event_type",
    "attempt",
    "attempted_at",
    "state",
    "status_code",
    "error",
    "latency_ms",
    "next_retry_at",
)


def list_deliveries(owner: str, mind_id: str, webhook_id: str, limit: int) -> list[dict[str, Any]]:
    """The most recent attempts first."""
    webhooks.owned(owner, mind_id, webhook_id)
    items = next(
        tables.query_pages(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(
                pk=f"MIND#{mind_id}", prefix=f"{tables.DELIVERY_PREFIX}{webhook_id}#"
            ),
            ScanIndexForward=False,
            Limit=limit,
        )
    )[0]
    return [{name: item.get(name) for name in _LOG_FIELDS} for item in items]


# ---------------------------------------------------------------- the delivery function's work


def _sqs_delay(wait: timedelta) -> int:
    """A wait as SQS DelaySeconds: whole seconds rounded up, at most 15 minutes (longer waits hop)."""
    return max(0, min(SQS_MAX_DELAY_SECONDS, math.ceil(wait.total_seconds())))


def handle_message(body: str, at: datetime | None = None) -> str:
    """Deliver one queued message; what happened: delivered, retrying, gave_up, waiting, dropped.

    Raises only when the retry could not be queued (the queue then redelivers this message).
    """
    now = at or clock.now()
    message: dict[str, Any] = json.loads(body)
    not_before = clock.from_iso(message["not_before"]) if message.get("not_before") else None
    if not_before is not None and now < not_before:  # a long wait hops through SQS's 15 minutes
        queue().send(body, _sqs_delay(not_before - now))
        return "waiting"
    payload = message["event"]
    subscription = webhooks.find(message["mind_id"], message["subscription_id"])
    if subscription is None or not subscription.wants(payload["type"]):
        logger.info("webhook delivery dropped: subscription gone, disabled or no longer subscribed")
        return "dropped"
    number = int(message.get("attempt") or 1)
    first = clock.from_iso(message["first_attempt_at"]) if message.get("first_attempt_at") else now
    result = attempt(subscription, payload, now)
    if result.delivered:
        webhooks.record_success(subscription, now)
        _log(subscription, payload, number, now, result, "delivered", None)
        return "delivered"
    current = webhooks.record_failure(subscription, now, result.error or "failed")
    deadline = first + GIVE_UP_AFTER
    retry_at = min(now + timedelta(seconds=backoff_seconds(number)), deadline)
    if current is None or not current.enabled or retry_at <= now:
        _log(subscription, payload, number, now, result, "gave_up", None)
        queue().dead_letter(body)
        return "gave_up"
    _log(subscription, payload, number, now, result, "retrying", retry_at)
    again = {
        **message,
        "attempt": number + 1,
        "first_attempt_at": clock.to_iso(first),
        "not_before": clock.to_iso(retry_at),
    }
    queue().send(json.dumps(again, ensure_ascii=False, separators=(",", ":")), _sqs_delay(retry_at - now))
    return "retrying"


def count_outcomes(outcomes: list[str]) -> None:
    """One metric per delivery outcome (delivered, retrying, gave_up, waiting, dropped, failed)."""
    for outcome in ("delivered", "retrying", "gave_up", "waiting", "dropped", "failed"):
        count = sum(1 for o in outcomes if o == outcome)
        metrics.add_metric(name=f"WebhookDeliveries_{outcome}", unit=MetricUnit.Count, value=count)


def send_test(owner: str, mind_id: str, webhook_id: str) -> dict[str, Any]:
    """Send a `ping` now, wait for the answer, log it, and say how it went (no retries)."""
    subscription = webhooks.owned(owner, mind_id, webhook_id)
    now = clock.now()
    payload = events.ping(mind_id, now, secrets.token_hex(8)).payload(subscription.id)
    result = attempt(subscription, payload, now)
    _log(subscription, payload, 1, now, result, "delivered" if result.delivered else "failed", None)
    return {
        "event_id": payload["id"],
        "event_type": payload["type"],
        "delivered": result.delivered,
        "status_code": result.status_code,
        "error": result.error,
        "latency_ms": result.latency_ms,
    }
