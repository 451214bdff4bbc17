"""The local webhook queue: bounded memory, AWS's backoff through SQS-style delays, and a worker that
sleeps until work is due. Time is a fake clock the worker's sleep moves; loop wakeups are counted,
never wall-clock time."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from synapse.core import clock
from synapse.webhooks import delivery, delivery_log, delivery_queue, health, subscriptions, transport

from infra import local_queue
from infra.local_queue import LocalQueue, Worker

START = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC).timestamp()


class FakeClock:
    def __init__(self) -> None:
        self.t = START

    def __call__(self) -> float:
        return self.t


class InlineExecutor(Executor):
    """Runs each submitted delivery at once, on the caller's thread: the loop is deterministic."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@dataclass
class Sleeper:
    """The worker's sleep: a set event ends it at once; otherwise the clock moves by the timeout."""

    now: FakeClock
    stop: threading.Event
    until: float
    sleeps: list[float] = field(default_factory=list)

    def __call__(self, event: threading.Event, seconds: float) -> bool:
        if event.is_set():
            return True
        assert seconds > 0, "a zero-second sleep is a busy loop"
        self.sleeps.append(seconds)
        self.now.t += seconds
        if self.now.t >= self.until:
            self.stop.set()
        return False


SUBSCRIPTION = subscriptions.Subscription(
    id="wh_down", mind_id="mind_1", url="https://down.example.com/hook", events=("memory.created",),
    enabled=True, created_at="2026-11-30T09:00:00.000Z", updated_at="2026-11-30T09:00:00.000Z",
    sealed_secret="",
)  # fmt: skip


@pytest.fixture
def failing_receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeClock, LocalQueue, list[float]]]:
    """The real delivery function over a local queue, against a receiver that always fails."""
    now = FakeClock()
    queue = LocalQueue(now=now)
    attempts: list[float] = []

    def fail(subscription: Any, payload: Any, at: datetime) -> transport.Outcome:
        attempts.append(at.timestamp())
        return transport.Outcome(False, 503, "HTTP 503", 1)

    monkeypatch.setattr(clock, "now", lambda: datetime.fromtimestamp(now.t, UTC))
    monkeypatch.setattr(subscriptions, "find", lambda mind_id, webhook_id: SUBSCRIPTION)
    monkeypatch.setattr(transport, "attempt", fail)
    monkeypatch.setattr(health, "record_failure", lambda subscription, at, error: subscription)
    monkeypatch.setattr(delivery_log, "record", lambda *args: None)
    delivery_queue.install(queue)
    yield now, queue, attempts
    delivery_queue.install(None)


@dataclass
class Counted:
    """The delivery function's core, counting its invocations."""

    invocations: int = 0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.invocations += 1
        return deliver(event, context)


def deliver(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        delivery.handle_message(record["body"])
    return {"batchItemFailures": []}


def event_message(number: int) -> str:
    event = {"id": f"evt_{number}", "type": "memory.created", "data": {}}
    return json.dumps({"mind_id": "mind_1", "subscription_id": "wh_down", "event": event})


def test_failing_deliveries_back_off_as_on_aws_and_the_worker_sleeps_between_them(
    failing_receiver: tuple[FakeClock, LocalQueue, list[float]],
) -> None:
    # Given 100 events for a receiver that always fails, and a worker whose sleep moves the clock
    now, queue, attempts = failing_receiver
    for number in range(100):
        queue.send(event_message(number), 0)
    stop = threading.Event()
    sleeper = Sleeper(now, stop, until=START + 25 * 3600)
    handler = Counted()
    worker = Worker(queue, handler=handler, executor=InlineExecutor())
    # When the worker serves the queue for 25 hours of (fake) time
    worker.serve(stop, wait=sleeper)
    # Then every event was attempted on the delivery function's backoff and gave up after 24 hours
    assert queue.dead_count == 100 and not queue.messages
    assert 8 * 100 <= len(attempts) <= 20 * 100  # hops through SQS's 15-minute limit are no attempts
    assert sorted(attempts)[:100] == [START] * 100
    assert all(m.delay_seconds <= local_queue.MAX_DELAY_SECONDS for m in queue.sent)
    # And the loop woke only to deliver or to sleep until the next message was due: at most two
    # wakeups per handler invocation (sends and hops included), where polling every 0.2 s would
    # have woken 450,000 times
    assert handler.invocations >= len(attempts)
    assert worker.wakeups <= 2 * handler.invocations + 2
    assert worker.wakeups < 25 * 3600 / 0.2 / 10


def test_gaps_between_attempts_follow_the_backoff_ceiling(
    failing_receiver: tuple[FakeClock, LocalQueue, list[float]],
) -> None:
    # Given one event for a receiver that always fails
    now, queue, attempts = failing_receiver
    queue.send(event_message(1), 0)
    stop = threading.Event()
    # When the worker serves it for 25 hours
    Worker(queue, handler=deliver, executor=InlineExecutor()).serve(
        stop, Sleeper(now, stop, START + 25 * 3600)
    )
    # Then each wait is between half the ceiling and the ceiling (+1 s of SQS rounding), the ceiling
    # doubling from 30 s up to delivery's cap, and the last attempt is within 24 hours of the first
    gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
    for number, gap in enumerate(gaps[:-1], start=1):
        ceiling = min(delivery.MAX_DELAY_SECONDS, delivery.BASE_DELAY_SECONDS << (number - 1))
        assert ceiling // 2 <= gap <= ceiling + 1, (number, gap)
    assert attempts[-1] - attempts[0] <= 24 * 3600 and queue.dead_count == 1


def test_a_busy_worker_takes_no_more_messages_than_it_has_threads() -> None:
    # Given a worker with two threads whose deliveries hang until released, and ten due messages
    release = threading.Event()
    seen: list[str] = []

    def hang(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event["Records"][0]["messageId"])
        release.wait(30)
        return {"batchItemFailures": []}

    now = FakeClock()
    queue = LocalQueue(now=now)
    for number in range(10):
        queue.send(f"body {number}", 0)
    worker = Worker(queue, handler=hang, parallel=2)
    try:
        # When it dispatches twice while both threads are busy
        first = worker.dispatch()
        again = worker.dispatch()
        # Then it took two, left eight untouched in the queue, and sleeps until a thread frees up
        assert len(first) == 2 and again == []
        assert sum(1 for m in queue.pending() if m.receives == 0) == 8
        assert worker.idle_seconds() is None
        # And once they finish, the next two are taken and nothing was received twice
        release.set()
        for future in first:
            future.result(timeout=30)
        assert len(worker.dispatch()) == 2
    finally:
        release.set()
        worker.close()
    assert len(set(seen)) == len(seen)


def test_delivered_messages_are_forgotten_and_history_is_bounded() -> None:
    # Given more messages than the queue remembers, all delivered, and as many dead letters
    now = FakeClock()
    queue = LocalQueue(now=now)
    worker = Worker(queue, handler=lambda event, context: {}, executor=InlineExecutor())
    total = local_queue.RECENT_SENDS + 500
    for number in range(total):
        queue.send(f"body {number}", 0)
        queue.dead_letter(f"dead {number}")
    # When the worker delivers them
    while worker.run_once():
        pass
    # Then nothing delivered is kept, and the send and dead-letter histories keep only the latest
    assert queue.messages == {} and queue.pending() == [] and queue.next_due_in() is None
    assert len(queue.sent) == local_queue.RECENT_SENDS and queue.sent[-1].body == f"body {total - 1}"
    assert len(queue.dead) == local_queue.DEAD_LETTERS_KEPT and queue.dead_count == total
