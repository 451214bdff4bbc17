"""A local stand-in for the webhook delivery queue (SQS) and its event source mapping.

Why in-process rather than SQS on the runner's moto server: moto honours `DelaySeconds` against
the wall clock only, so tests could not drive a backoff schedule of minutes and hours without
waiting for it. This queue keeps SQS's semantics that delivery relies on — a message becomes
visible after its delay (at most 900 s, as SQS allows), a received message is invisible for the
visibility timeout and comes back unless deleted, a message received `max_receives` times goes
to the dead-letter list (the redrive policy) — and reads time from `synapse.clock`, which tests
move. The backoff itself is the delivery function's (`synapse.webhooks.delivery`): it sends a
failed event again with its delay, and this queue keeps the message hidden for exactly that delay,
as SQS does.

Bounded: a deleted (delivered) message is forgotten; only the last `RECENT_SENDS` sends and
`DEAD_LETTERS_KEPT` dead letters are kept for tests and inspection.

`Worker` is the event source mapping: it hands each due message, on its own, to the
`deliver_webhook` handler named in template.yaml (Lambda's SQS event shape, batch size 1, on a
thread pool so a slow receiver holds up nobody else), and deletes the messages the handler did not
report as failed. It takes no more messages than it has free threads (the rest stay queued, so
nothing is received twice while it waits). `Worker.serve` sleeps until the next message is due,
a message is sent, or a thread frees up: failing deliveries waiting on their backoff cost no CPU.
`start` installs the queue into the layer and serves it beside `make run`.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import template
from infra.gateway import LambdaContext, load_handler

log = logging.getLogger("synapse.local_queue")

VISIBILITY_SECONDS = 180  # template.yaml's WebhookDeliveries VisibilityTimeout
MAX_RECEIVES = 5  # its redrive policy's maxReceiveCount
MAX_DELAY_SECONDS = 900
MAX_IDLE_SECONDS = 60.0  # an idle worker still looks once a minute (a clock moved under it)
RECENT_SENDS = 1000  # what `sent` remembers (tests read the schedule); older sends are forgotten
DEAD_LETTERS_KEPT = 1000
QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:synapse-webhook-deliveries"

Handler = Callable[[dict[str, Any], Any], Any]
Wait = Callable[[threading.Event, float], object]


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
    """SQS's send / receive / delete with delays, visibility and a dead-letter list; thread-safe.

    `wakeup` is set whenever a message is sent, so a waiting worker looks again at once."""

    def __init__(self, now: Callable[[], float] = _now, max_receives: int = MAX_RECEIVES) -> None:
        self.now = now
        self.max_receives = max_receives
        self.messages: dict[str, Message] = {}
        self.dead_count = 0
        self.wakeup = threading.Event()
        self._due: list[tuple[float, int, str]] = []  # (visible_at, order, id); stale entries skipped
        self._recent: deque[Message] = deque(maxlen=RECENT_SENDS)
        self._dead: deque[str] = deque(maxlen=DEAD_LETTERS_KEPT)
        self._ids = itertools.count(1)
        self._order = itertools.count()
        self._lock = threading.Lock()

    @property
    def sent(self) -> list[Message]:
        """The last `RECENT_SENDS` messages sent, oldest first, with their delays."""
        with self._lock:
            return list(self._recent)

    @property
    def dead(self) -> list[str]:
        """The bodies of the last `DEAD_LETTERS_KEPT` dead letters (`dead_count` counts them all)."""
        with self._lock:
            return list(self._dead)

    def send(self, body: str, delay_seconds: int) -> None:
        if not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
            raise ValueError(f"DelaySeconds must be 0-{MAX_DELAY_SECONDS}, not {delay_seconds}")
        with self._lock:
            message = Message(f"msg-{next(self._ids)}", body, self.now() + delay_seconds, 0, delay_seconds)
            self.messages[message.id] = message
            self._schedule(message)
            self._recent.append(message)
        self.wakeup.set()

    def dead_letter(self, body: str) -> None:
        with self._lock:
            self._bury(body)

    def receive(self, limit: int = 10) -> list[Message]:
        """Due messages, soonest first; each becomes invisible for the visibility timeout."""
        now = self.now()
        taken: list[Message] = []
        with self._lock:
            while self._due and len(taken) < limit and self._due[0][0] <= now:
                message = self._current(heapq.heappop(self._due))
                if message is None:
                    continue
                if message.receives >= self.max_receives:
                    del self.messages[message.id]
                    self._bury(message.body)
                    continue
                message.receives += 1
                message.visible_at = now + VISIBILITY_SECONDS
                self._schedule(message)
                taken.append(message)
        return taken

    def delete(self, message_id: str) -> None:
        with self._lock:
            self.messages.pop(message_id, None)

    def pending(self) -> list[Message]:
        with self._lock:
            return sorted(self.messages.values(), key=lambda m: m.visible_at)

    def next_due_in(self) -> float | None:
        """Seconds until the soonest message is visible (0 when one is), None when the queue is empty."""
        with self._lock:
            while self._due and self._current(self._due[0]) is None:
                heapq.heappop(self._due)
            return max(0.0, self._due[0][0] - self.now()) if self._due else None

    def _schedule(self, message: Message) -> None:
        heapq.heappush(self._due, (message.visible_at, next(self._order), message.id))

    def _current(self, entry: tuple[float, int, str]) -> Message | None:
        """The entry's message, unless it was deleted or received again since (a stale entry)."""
        message = self.messages.get(entry[2])
        return message if message is not None and message.visible_at == entry[0] else None

    def _bury(self, body: str) -> None:
        self._dead.append(body)
        self.dead_count += 1


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


def _sleep(event: threading.Event, seconds: float) -> object:
    return event.wait(seconds)


class Worker:
    """Invokes the delivery handler once per due message, in parallel, like the event source mapping."""

    def __init__(
        self,
        queue: LocalQueue,
        handler: Handler | None = None,
        parallel: int = 8,
        executor: Executor | None = None,
    ) -> None:
        self.queue = queue
        self.handler = handler or load_handler(*delivery_function())
        self.parallel = parallel
        self.pool = executor or ThreadPoolExecutor(
            max_workers=parallel, thread_name_prefix="webhook-delivery"
        )
        self.wakeups = 0  # times `serve` woke up (tests count them: no work, no wakeup)
        self._in_flight = 0
        self._lock = threading.Lock()

    def _invoke(self, message: Message) -> None:
        try:
            answer = self.handler({"Records": [sqs_record(message)]}, LambdaContext("deliver_webhook")) or {}
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures") or []}
            if message.id not in failed:
                self.queue.delete(message.id)
        except Exception:
            log.exception("deliver_webhook failed; the message comes back after its visibility timeout")
        finally:
            with self._lock:
                self._in_flight -= 1
            self.queue.wakeup.set()  # a thread is free: look for the next due message

    def _submit(self, limit: int) -> list[Future[None]]:
        messages = self.queue.receive(limit=limit)
        with self._lock:
            self._in_flight += len(messages)
        return [self.pool.submit(self._invoke, message) for message in messages]

    def free(self) -> int:
        with self._lock:
            return max(0, self.parallel - self._in_flight)

    def dispatch(self) -> list[Future[None]]:
        """Start delivering as many due messages as there are free threads; returns at once."""
        free = self.free()
        return self._submit(free) if free else []

    def run_once(self) -> int:
        """Deliver every due message and wait for all of them; how many were taken."""
        futures = self._submit(100)
        for future in futures:
            future.result()
        return len(futures)

    def idle_seconds(self) -> float | None:
        """How long `serve` may sleep: until the next message is due, or None (until woken) when
        every thread is busy; at most MAX_IDLE_SECONDS."""
        if not self.free():
            return None
        due = self.queue.next_due_in()
        return MAX_IDLE_SECONDS if due is None else min(due, MAX_IDLE_SECONDS)

    def serve(self, stop: threading.Event, wait: Wait = _sleep) -> None:
        """Deliver until `stop` is set, sleeping whenever nothing can be done; set `queue.wakeup`
        together with `stop` to end a sleep early. `wait(event, seconds)` is the sleep (tests pass one
        that moves their clock)."""
        while not stop.is_set():
            self.queue.wakeup.clear()  # before looking, so a send from now on ends the sleep below
            try:
                self.dispatch()
                idle = self.idle_seconds()
            except Exception:
                log.exception("webhook queue: dispatch failed; trying again in a second")
                idle = 1.0
            if idle is None or idle > 0:
                wait(self.queue.wakeup, MAX_IDLE_SECONDS if idle is None else idle)
            self.wakeups += 1

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def start(stop: threading.Event) -> threading.Thread:
    """Install an in-process queue for the layer and deliver from it until `stop` is set."""
    from synapse.webhooks import delivery_queue

    queue = LocalQueue()
    delivery_queue.install(queue)
    worker = Worker(queue)

    def loop() -> None:
        try:
            worker.serve(stop)
        finally:
            worker.close()

    def wake_on_stop() -> None:
        stop.wait()
        queue.wakeup.set()

    threading.Thread(target=wake_on_stop, name="webhook-queue-stop", daemon=True).start()
    thread = threading.Thread(target=loop, name="webhook-queue", daemon=True)
    thread.start()
    return thread
