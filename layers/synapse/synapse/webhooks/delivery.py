"""Delivering queued webhook events: each message on its own, retried with backoff, logged.

The delivery function takes a batch of queue messages (`deliver_batch`), each on its own thread,
and POSTs each event once (`transport.attempt`). A failure is retried by sending the message again
with a delay drawn from an exponential backoff with jitter: half the ceiling plus a random share of
the other half, the ceiling doubling from 30 s to about 4 h: waits never shrink before the cap,
then stay between 2 and 4 h. SQS delays stop at 15 min, so a longer wait hops: the message comes
back early, sees its `not_before`, and goes round again. After 24 hours of failing the event goes
to the dead-letter queue. Every attempt is logged (`delivery_log`), and counts towards the
subscription's health (`health`). A message queued before its subscription's creator was removed
or demoted is dropped (`subscriptions.held`), as one for a deleted subscription is.
"""

from __future__ import annotations

import json
import math
import random
import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.core.observability import COUNT, logger, metrics
from synapse.memory import events
from synapse.webhooks import delivery_log, delivery_queue, health, subscriptions, transport

BASE_DELAY_SECONDS = 30
# 4 h 16 min: a power of two times the base, so waits never shrink
MAX_DELAY_SECONDS = BASE_DELAY_SECONDS << 9
GIVE_UP_AFTER = timedelta(hours=24)
MAX_PARALLEL = 10
OUTCOMES = ("delivered", "retrying", "gave_up", "waiting", "dropped", "failed")


def backoff_seconds(failed_attempt: int, rng: random.Random | None = None) -> int:
    """Seconds to wait after attempt `failed_attempt` (1-based) failed: exponential, with jitter."""
    ceiling = min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS << max(0, min(failed_attempt - 1, 20)))
    half = ceiling // 2
    jitter: int = (rng or random.SystemRandom()).randint(0, ceiling - half)
    return half + jitter


def _sqs_delay(wait: timedelta) -> int:
    """A wait as SQS DelaySeconds: whole seconds rounded up, at most 15 minutes (longer waits hop)."""
    return max(0, min(delivery_queue.SQS_MAX_DELAY_SECONDS, math.ceil(wait.total_seconds())))


def handle_message(body: str, at: datetime | None = None) -> str:
    """Deliver one queued message; what happened: delivered, retrying, gave_up, waiting, dropped.

    Raises only when the retry could not be queued (the queue then redelivers this message).
    """
    now = at or clock.now()
    message: dict[str, Any] = json.loads(body)
    not_before = clock.from_iso(message["not_before"]) if message.get("not_before") else None
    if not_before is not None and now < not_before:  # a long wait hops through SQS's 15 minutes
        delivery_queue.current().send(body, _sqs_delay(not_before - now))
        return "waiting"
    payload = message["event"]
    subscription = subscriptions.find(message["mind_id"], message["subscription_id"])
    if subscription is None or not subscription.wants(payload["type"]):
        logger.info("webhook delivery dropped: subscription gone, disabled or no longer subscribed")
        return "dropped"
    if not subscriptions.held(subscription):
        logger.info("webhook delivery dropped: its creator no longer holds the role that made it")
        return "dropped"
    number = int(message.get("attempt") or 1)
    first = clock.from_iso(message["first_attempt_at"]) if message.get("first_attempt_at") else now
    result = transport.attempt(subscription, payload, now)
    if result.delivered:
        health.record_success(subscription, now)
        delivery_log.record(subscription, payload, number, now, result, "delivered", None)
        return "delivered"
    current = health.record_failure(subscription, now, result.error or "failed")
    deadline = first + GIVE_UP_AFTER
    retry_at = min(now + timedelta(seconds=backoff_seconds(number)), deadline)
    if current is None or not current.enabled or retry_at <= now:
        delivery_log.record(subscription, payload, number, now, result, "gave_up", None)
        delivery_queue.current().dead_letter(body)
        return "gave_up"
    delivery_log.record(subscription, payload, number, now, result, "retrying", retry_at)
    again = {
        **message,
        "attempt": number + 1,
        "first_attempt_at": clock.to_iso(first),
        "not_before": clock.to_iso(retry_at),
    }
    retry = json.dumps(again, ensure_ascii=False, separators=(",", ":"))
    delivery_queue.current().send(retry, _sqs_delay(retry_at - now))
    return "retrying"


def _deliver(record: dict[str, Any]) -> str:
    try:
        return handle_message(record["body"])
    except Exception:
        logger.exception("webhook delivery: message failed; SQS will redeliver it")
        return "failed"


def count_outcomes(outcomes: list[str]) -> None:
    """One metric per delivery outcome (delivered, retrying, gave_up, waiting, dropped, failed)."""
    for outcome in OUTCOMES:
        count = sum(1 for o in outcomes if o == outcome)
        metrics.add_metric(name=f"WebhookDeliveries_{outcome}", unit=COUNT, value=count)


def deliver_batch(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Deliver a batch of SQS records, each on its own thread, so one slow receiver holds up no
    other; the answer names the messages to redeliver (those whose retry could not be queued)."""
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(records)))) as pool:
        outcomes = list(pool.map(_deliver, records))
    count_outcomes(outcomes)
    failed = [r["messageId"] for r, outcome in zip(records, outcomes, strict=True) if outcome == "failed"]
    return {"batchItemFailures": [{"itemIdentifier": str(m)} for m in failed]}


def send_test(owner: str, mind_id: str, webhook_id: str) -> dict[str, Any]:
    """Send a `ping` now, wait for the answer, log it, and say how it went (no retries)."""
    subscription = subscriptions.owned(owner, mind_id, webhook_id)
    now = clock.now()
    payload = events.ping(mind_id, now, secrets.token_hex(8)).payload(subscription.id)
    result = transport.attempt(subscription, payload, now)
    state = "delivered" if result.delivered else "failed"
    delivery_log.record(subscription, payload, 1, now, result, state, None)
    return {
        "event_id": payload["id"],
        "event_type": payload["type"],
        "delivered": result.delivered,
        "status_code": result.status_code,
        "error": result.error,
        "latency_ms": result.latency_ms,
    }
