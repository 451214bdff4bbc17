"""A local stand-in for the webhook delivery queue (SQS) and its event source mapping.

Why in-process rather than SQS on the runner's moto server: moto honours `DelaySeconds` against
the wall clock only, so tests could not drive a backoff schedule of minutes and hours without
waiting for it. This queue keeps SQS's semantics that delivery relies on — a message becomes
visible after its delay (at most 900 s, as SQS allows), a received message is invisible for the
visibility timeout and comes back unless deleted, a message received `max_receives` times goes
to the dead-letter list (the redrive policy) — and reads time from `synapse.clock`, which tests
move.

`Worker` is the event source mapping: it hands each due message, on its own, to the
`deliver_webhook` handler named in template.yaml (Lambda's SQS event shape, batch size 1, on a
thread pool so a slow receiver holds up nobody else), and deletes the messages the handler did not
report as failed. `start` installs the queue into the layer and runs the worker beside `make run`.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import template
from infra.gateway import LambdaContext, load_handler

log = logging.getLogger("synapse.local_queue")

POLL_SECONDS = 0.2
VISIBILITY_SECONDS = 180  # template.yaml's WebhookDeliveries VisibilityTimeout
MAX_RECEIVES = 5  # its redrive policy's maxReceiveCount
MAX_DELAY_SECONDS = 900
QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:synapse-webhook-deliveries"

Handler = Callable[[dict[str, Any], Any], Any]


def _now() -> float:
    from synapse.core import clock

    return clock.now().timestamp()


@dataclass
class Message:
    id: str
    body: str
    visible_at: float
    receives: int = 0
    delay_seconds: int = 0


class LocalQueue:
    """SQS's send / receive / delete with delays, visibility and a dead-letter list; thread-safe."""

    def __init__(self, now: Callable[[], float] = _now, max_receives: int = MAX_RECEIVES) -> None:
        self.now = now
        self.max_receives = max_receives
        self.messages: dict[str, Message] = {}
        self.dead: list[str] = []
        self.sent: list[Message] = []  # every message ever sent, with its delay (tests read the schedule)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def send(self, body: str, delay_seconds: int) -> None:
        if not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
            raise ValueError(f"DelaySeconds must be 0-{MAX_DELAY_SECONDS}, not {delay_seconds}")
        with self._lock:
            message = Message(f"msg-{next(self._ids)}", body, self.now() + delay_seconds, 0, delay_seconds)
            self.messages[message.id] = message
            self.sent.append(message)

    def dead_letter(self, body: str) -> None:
        with self._lock:
            self.dead.append(body)

    def receive(self, limit: int = 10) -> list[Message]:
        """Due messages, soonest first; each becomes invisible for the visibility timeout."""
        now = self.now()
        with self._lock:
            due = sorted(
                (m for m in self.messages.values() if m.visible_at <= now), key=lambda m: m.visible_at
            )
            taken = []
            for message in due:
                if message.receives >= self.max_receives:
                    del self.messages[message.id]
                    self.dead.append(message.body)
                    continue
                message.receives += 1
                message.visible_at = now + VISIBILITY_SECONDS
                taken.append(message)
                if len(taken) == limit:
                    break
            return taken

    def delete(self, message_id: str) -> None:
        with self._lock:
            self.messages.pop(message_id, None)

    def pending(self) -> list[Message]:
        with self._lock:
            return sorted(self.messages.values(), key=lambda m: m.visible_at)


def delivery_function() -> tuple[Path, str]:
    """CodeUri and Handler of the function template.yaml subscribes to an SQS queue."""
    for resource in template.resources("AWS::Serverless::Function").values():
        events = (resource["Properties"].get("Events") or {}).values()
        if any(event["Type"] == "SQS" for event in events):
            handler = (
                resource["Properties"].get("Handler") or template.load()["Globals"]["Function"]["Handler"]
            )
            return template.ROOT / resource["Properties"]["CodeUri"], str(handler)
    raise LookupError("template.yaml has no function with an SQS event")


def sqs_record(message: Message) -> dict[str, Any]:
    """The record Lambda hands a function for one SQS message."""
    return {
        "messageId": message.id,
        "receiptHandle": message.id,
        "body": message.body,
        "attributes": {"ApproximateReceiveCount": str(message.receives)},
        "messageAttributes": {},
        "md5OfBody": hashlib.md5(message.body.encode(), usedforsecurity=False).hexdigest(),
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": "us-east-1",
    }


class Worker:
    """Invokes the delivery handler once per due message, in parallel, like the event source mapping."""

    def __init__(self, queue: LocalQueue, handler: Handler | None = None, parallel: int = 8) -> None:
        self.queue = queue
        self.handler = handler or load_handler(*delivery_function())
        self.pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="webhook-delivery")

    def _invoke(self, message: Message) -> None:
        try:
            answer = self.handler({"Records": [sqs_record(message)]}, LambdaContext("deliver_webhook")) or {}
        except Exception:
            log.exception("deliver_webhook failed; the message comes back after its visibility timeout")
            return
        failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures") or []}
        if message.id not in failed:
            self.queue.delete(message.id)

    def dispatch(self) -> list[Future[None]]:
        """Start delivering every due message; returns at once (the futures finish with them)."""
        return [self.pool.submit(self._invoke, message) for message in self.queue.receive(limit=100)]

    def run_once(self) -> int:
        """Deliver every due message and wait for all of them; how many were taken."""
        futures = self.dispatch()
        for future in futures:
            future.result()
        return len(futures)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def start(stop: threading.Event) -> threading.Thread:
    """Install an in-process queue for the layer and deliver from it until `stop` is set."""
    from synapse.webhooks import delivery_queue

    queue = LocalQueue()
    delivery_queue.install(queue)
    worker = Worker(queue)

    def loop() -> None:
        while not stop.is_set():
            try:
                worker.dispatch()
            except Exception:
                log.exception("webhook queue: dispatch failed; trying again")
            stop.wait(POLL_SECONDS)
        worker.close()

    thread = threading.Thread(target=loop, name="webhook-queue", daemon=True)
    thread.start()
    return thread
