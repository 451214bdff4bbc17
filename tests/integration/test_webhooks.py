"""Outbound webhooks in process, with a real HTTP receiver on 127.0.0.1: events come from the moto
stream through the producer handler, sit in the in-process queue, and the delivery handler POSTs
them. Tests drive each stage themselves; the clock is moved, never waited on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from synapse.core import clock
from synapse.lifecycle import mind_deletion
from synapse.webhooks import delivery_queue, producers, signing, subscriptions, transport

from infra.gateway import LambdaContext, load_handler
from infra.local_queue import LocalQueue, Worker
from infra.stream_pump import StreamReader, admitted, stream_filters, stream_functions
from tests.support.api import Api, MindHandle, jwt_for
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.receiver import Received, Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan

ALL_EVENTS = ["memory.created", "memory.updated", "memory.verified", "memory.deleted", "memory.expiring"]


class MovingClock:
    """`clock.now()` for the service; tests move it forward explicitly."""

    def __init__(self, start: datetime) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@dataclass
class Outbox:
    """The stream → producer → queue → delivery chain, one step at a time."""

    queue: LocalQueue
    worker: Worker
    reader: StreamReader
    producer: Any

    def pump(self) -> int:
        """Hand the producer what Lambda would: the new records its stream filter admits."""
        read = self.reader.poll()
        records = [record for record in read if admitted(record, stream_filters("WebhookEventsFunction"))]
        if records:
            answer = self.producer({"Records": records}, LambdaContext("webhook_events"))
            assert answer == {"batchItemFailures": []}, answer
        return len(read)

    def drain(self) -> None:
        """Produce and deliver until nothing is due (retries wait for a moved clock)."""
        while self.pump() or self.worker.run_once():
            pass


@pytest.fixture
def outbox(configure: Configure, dynamo: Any) -> Iterator[Outbox]:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    queue = LocalQueue()
    delivery_queue.install(queue)
    worker = Worker(queue)
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    producer = load_handler(*stream_functions()["WebhookEventsFunction"])
    yield Outbox(queue, worker, StreamReader(dynamo, streams, "test-memories"), producer)
    worker.close()
    delivery_queue.install(None)


@pytest.fixture
def moving_clock(monkeypatch: pytest.MonkeyPatch) -> MovingClock:
    moving = MovingClock(datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC))
    monkeypatch.setattr(clock, "now", moving)
    return moving


def subscribe(api: Api, mind: MindHandle, url: str, events: list[str] | None = None) -> tuple[str, str]:
    answer = api.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={"url": url, "events": events or ALL_EVENTS},
    )
    assert answer.status == 201, answer.text
    return answer.json()["id"], answer.json()["secret"]


def payloads(got: list[Received]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in got]


def assert_signed(got: Received, secret: str, now: int | None = None) -> dict[str, Any]:
    """The documented scheme verifies the raw body, and the headers name the body's event."""
    signing.verify(got.headers.get("synapse-signature"), got.body, [secret], now=now)
    body: dict[str, Any] = json.loads(got.body)
    assert got.headers["synapse-event-id"] == body["id"] and got.headers["synapse-event-type"] == body["type"]
    assert got.headers["content-type"] == "application/json"
    return body


def deliveries(api: Api, mind: MindHandle, webhook_id: str) -> list[dict[str, Any]]:
    answer = api.call("GET", f"/minds/{mind.id}/webhooks/{webhook_id}/deliveries", token=mind.jwt)
    assert answer.status == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["deliveries"]
    return found


# ---------------------------------------------------------------- every event type


def test_every_event_type_arrives_signed_from_every_write_path(
    api: Api, outbox: Outbox, receiver: Receiver, dynamo: Any
) -> None:
    # Given a mind whose webhook subscribes to every event
    mind = api.create_mind()
    webhook_id, secret = subscribe(api, mind, receiver.url("/all"))
    # When an agent stores a memory, stores it again by key, a person verifies it, it is deleted,
    stored = api.store(mind, as_agent=True, key="home_city", content="Lives in Berlin").json()
    assert api.store(mind, as_agent=True, key="home_city", content="Lives in Hamburg").status == 200
    assert api.call("POST", f"/memory/{stored['id']}/verify", **as_user(mind)).status == 200
    assert api.call("DELETE", f"/memory/{stored['id']}", **as_user(mind)).status == 204
    # And another memory expires within a day, the hourly run finds it, and a ping is sent
    soon = clock.to_iso(clock.now() + timedelta(hours=2))
    kept = api.store(mind, as_agent=True, key="trip", content="In Rome this week", expires_at=soon).json()
    outbox.drain()
    assert producers.publish_expiring()["messages"] == 1
    ping = api.call("POST", f"/minds/{mind.id}/webhooks/{webhook_id}/test", token=mind.jwt)
    # And finally the whole mind is deleted
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    outbox.drain()

    # Then the ping was delivered at once
    assert ping.status == 200 and ping.json()["delivered"] is True and ping.json()["status_code"] == 200
    # And every event arrived signed (a queue promises no order between messages)
    bodies = [assert_signed(got, secret) for got in receiver.got("/all")]
    kinds = sorted((b["type"], (b["data"].get("memory") or {}).get("id") or "") for b in bodies)
    assert kinds == sorted(
        [
            ("memory.created", stored["id"]),
            ("memory.updated", stored["id"]),  # replace by key
            ("memory.updated", stored["id"]),  # the verification changes the memory...
            ("memory.verified", stored["id"]),  # ...and says so
            ("memory.deleted", stored["id"]),
            ("memory.created", kept["id"]),
            ("memory.expiring", kept["id"]),
            ("ping", ""),
            ("memory.deleted", kept["id"]),  # purged with its mind
        ]
    )
    # And each body has the documented shape, replace-by-key carrying what it replaced
    assert all(
        set(b) == {"id", "type", "created_at", "mind_id", "data"} and b["mind_id"] == mind.id for b in bodies
    )
    updates = sorted(
        (b for b in bodies if b["type"] == "memory.updated"), key=lambda b: b["data"]["memory"]["version"]
    )
    replaced = updates[0]["data"]
    assert (replaced["previous"]["content"], replaced["memory"]["content"]) == (
        "Lives in Berlin",
        "Lives in Hamburg",
    )
    verified = next(b["data"] for b in bodies if b["type"] == "memory.verified")
    assert verified["memory"]["verified"] is True and verified["previous"]["verified"] is False
    assert len({b["id"] for b in bodies}) == len(bodies)
    # And the deleted mind's webhook is left to DynamoDB's TTL, once its purge's events are out
    (left,) = [i for i in scan(dynamo, MINDS) if i["sk"] == f"WEBHOOK#{webhook_id}"]
    assert left["ttl"] > clock.now().timestamp() + 24 * 3600


def test_a_proposal_and_its_decision_arrive_through_the_streams_filter(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    # Given a mind with a verified memory and a webhook for proposals
    mind = api.create_mind()
    subscribe(api, mind, receiver.url("/proposals"), ["proposal.created", "proposal.accepted"])
    memory = api.store(mind, key="home_city", content="Lives in Berlin").json()
    # When an agent's change to it is proposed and a person accepts it
    proposed = api.store(mind, as_agent=True, key="home_city", content="Lives in Hamburg")
    assert proposed.status == 202, proposed.text
    proposal = proposed.json()["proposal"]
    assert api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind)).status == 200
    outbox.drain()
    # Then both events came through the records the producer's FilterCriteria admit (PROP# too)
    bodies = [json.loads(got.body) for got in receiver.got("/proposals")]
    assert sorted(b["type"] for b in bodies) == ["proposal.accepted", "proposal.created"]
    assert {b["data"]["proposal"]["id"] for b in bodies} == {proposal["id"]}
    assert {b["data"]["memory"]["id"] for b in bodies} == {memory["id"]}


def test_a_deleted_mind_without_memories_leaves_its_webhooks_to_ttl_too(
    api: Api, outbox: Outbox, receiver: Receiver, dynamo: Any
) -> None:
    # Given a mind that holds no memory, with a webhook for every event (memory.expiring included)
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/empty"))
    # When the mind is deleted: its purge removes nothing, so no memory.deleted passes the stream
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    outbox.drain()
    # Then its webhook and its memory.expiring registration are still left to DynamoDB's TTL
    left = {i["sk"]: i for i in scan(dynamo, MINDS) if mind.id in str(i)}
    assert set(left) == {f"WEBHOOK#{webhook_id}", f"MIND#{mind.id}"}, left
    assert all(i["ttl"] > clock.now().timestamp() + 24 * 3600 for i in left.values()), left


def test_only_subscribed_events_reach_a_webhook_and_replayed_records_keep_their_event_id(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    # Given one webhook for deletions only and another for creations
    mind = api.create_mind()
    subscribe(api, mind, receiver.url("/deleted"), ["memory.deleted"])
    subscribe(api, mind, receiver.url("/created"), ["memory.created"])
    # When a memory is created and deleted, and the producer gets the same records twice (at least once)
    stored = api.store(mind, as_agent=True).json()
    api.call("DELETE", f"/memory/{stored['id']}", **as_agent(mind))
    records = outbox.reader.poll()
    for _ in range(2):
        outbox.producer({"Records": records}, LambdaContext("webhook_events"))
    outbox.worker.run_once()
    # Then each webhook got only its type, the replay under the same event id (receivers dedupe on it)
    created, deleted = payloads(receiver.got("/created")), payloads(receiver.got("/deleted"))
    assert [b["type"] for b in created] == ["memory.created"] * 2
    assert [b["type"] for b in deleted] == ["memory.deleted"] * 2
    assert created[0]["id"] == created[1]["id"] and deleted[0]["id"] == deleted[1]["id"]
    assert created[0]["id"] != deleted[0]["id"]


# ---------------------------------------------------------------- retries, slow receivers, giving up


def test_a_receiver_that_fails_twice_gets_the_event_once_more_with_growing_delays(
    api: Api, outbox: Outbox, receiver: Receiver, moving_clock: MovingClock
) -> None:
    # Given a receiver that answers 500 twice, then 200
    mind = api.create_mind()
    webhook_id, secret = subscribe(api, mind, receiver.url("/flaky"), ["memory.created"])
    receiver.answer("/flaky", 500, 503)
    api.store(mind, as_agent=True)
    outbox.pump()
    # When the first attempt fails, nothing is due until the clock reaches the retry
    assert outbox.worker.run_once() == 1
    first_delay = outbox.queue.sent[-1].delay_seconds
    assert outbox.worker.run_once() == 0
    moving_clock.advance(first_delay)
    assert outbox.worker.run_once() == 1
    second_delay = outbox.queue.sent[-1].delay_seconds
    moving_clock.advance(second_delay)
    assert outbox.worker.run_once() == 1
    # Then the receiver saw the same signed event three times, the last one answered 200
    got = receiver.got("/flaky")
    bodies = [assert_signed(g, secret, now=int(moving_clock().timestamp())) for g in got]
    assert len(bodies) == 3 and len({b["id"] for b in bodies}) == 1
    # And the waits grew, exponentially with jitter (30 s then 60 s ceilings, at least half of each)
    assert 15 <= first_delay <= 30 <= second_delay <= 60  # half to all of 30 s, then of 60 s
    # And nothing more comes, however long we wait
    moving_clock.advance(48 * 3600)
    assert outbox.worker.run_once() == 0 and len(receiver.got("/flaky")) == 3
    # And the delivery log tells the story, newest first, with the retries' times
    log = deliveries(api, mind, webhook_id)
    assert [(d["attempt"], d["state"], d["status_code"]) for d in log] == [
        (3, "delivered", 200),
        (2, "retrying", 503),
        (1, "retrying", 500),
    ]
    assert (
        log[2]["next_retry_at"] == log[1]["attempted_at"]
        and log[1]["next_retry_at"] == log[0]["attempted_at"]
    )
    assert all(d["event_type"] == "memory.created" and d["event_id"] == bodies[0]["id"] for d in log)
    assert all(isinstance(d["latency_ms"], int) and d["latency_ms"] >= 0 for d in log)


def test_a_receiver_that_never_answers_does_not_delay_another_subscriber(
    api: Api, outbox: Outbox, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given two subscribers, one of which holds every request past the delivery timeout
    monkeypatch.setattr(transport, "TIMEOUT_SECONDS", 1.0)
    mind = api.create_mind()
    slow_id, _ = subscribe(api, mind, receiver.url("/slow"), ["memory.created"])
    fast_id, secret = subscribe(api, mind, receiver.url("/fast"), ["memory.created"])
    release_slow = receiver.hold("/slow")
    api.store(mind, as_agent=True)
    outbox.pump()
    # When the worker takes both messages
    in_flight = outbox.worker.dispatch()
    assert len(in_flight) == 2
    # Then the fast subscriber has its event while the slow one's request is still unanswered
    assert receiver.wait_for("/fast", 1) and receiver.wait_for("/slow", 1)
    assert_signed(receiver.got("/fast")[0], secret)
    assert not release_slow.is_set() and not all(f.done() for f in in_flight)
    # And once the slow attempt times out it is logged as such, with a retry scheduled
    for future in in_flight:
        future.result(timeout=30)
    release_slow.set()
    slow_log = deliveries(api, mind, slow_id)
    assert [(d["state"], d["status_code"]) for d in slow_log] == [("retrying", None)]
    assert slow_log[0]["error"].startswith("timeout") and slow_log[0]["next_retry_at"]
    assert [d["state"] for d in deliveries(api, mind, fast_id)] == ["delivered"]


def test_an_event_is_given_up_after_24_hours_and_a_webhook_failing_for_3_days_is_disabled(
    api: Api, outbox: Outbox, receiver: Receiver, moving_clock: MovingClock
) -> None:
    # Given a receiver that always fails
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/down"), ["memory.created"])
    receiver.answer("/down", *([500] * 1000))
    api.store(mind, as_agent=True, key="day_1")
    outbox.pump()
    start = moving_clock()
    # When the clock follows the retry schedule until the queue is empty
    while outbox.queue.pending():
        moving_clock.moment = datetime.fromtimestamp(outbox.queue.pending()[0].visible_at, UTC)
        outbox.worker.run_once()
    # Then the event went to the dead-letter queue after 24 hours of attempts, never a longer SQS delay
    assert moving_clock() - start == timedelta(hours=24)
    assert (
        len(outbox.queue.dead) == 1 and json.loads(outbox.queue.dead[0])["event"]["type"] == "memory.created"
    )
    assert all(m.delay_seconds <= 900 for m in outbox.queue.sent)
    attempts = len(receiver.got("/down"))
    assert 8 <= attempts <= 20  # hops through SQS's 15-minute limit are not attempts
    assert deliveries(api, mind, webhook_id)[0]["state"] == "gave_up"

    # When events keep failing for more than 3 days
    for day in (2, 3, 4):
        moving_clock.moment = start + timedelta(days=day - 1, seconds=1)
        api.store(mind, as_agent=True, key=f"day_{day}")
        outbox.pump()
        outbox.worker.run_once()
    # Then the webhook is disabled and says why, and its queued retry is dropped
    listed = api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt).json()["webhooks"][0]
    assert listed["enabled"] is False and listed["failing_since"] == clock.to_iso(start)
    assert "failing since" in listed["disabled_reason"] and "HTTP 500" in listed["disabled_reason"]
    before = len(receiver.got("/down"))
    moving_clock.advance(3600)
    outbox.drain()
    assert len(receiver.got("/down")) == before
    # And enabling it again starts afresh
    again = api.call(
        "PATCH", f"/minds/{mind.id}/webhooks/{webhook_id}", token=mind.jwt, json_body={"enabled": True}
    )
    assert (
        again.status == 200
        and again.json()["disabled_reason"] is None
        and again.json()["failing_since"] is None
    )


# ---------------------------------------------------------------- memory.expiring


def test_memory_expiring_fires_once_per_memory_and_expiry_time(
    api: Api, outbox: Outbox, receiver: Receiver, moving_clock: MovingClock
) -> None:
    # Given a webhook for memory.expiring, and memories expiring in 2 h and in 3 days
    mind = api.create_mind()
    other = api.create_mind(user="user-2")
    subscribe(api, mind, receiver.url("/expiring"), ["memory.expiring"])
    in_2h = clock.to_iso(moving_clock() + timedelta(hours=2))
    soon = api.store(mind, as_agent=True, key="soon", expires_at=in_2h).json()
    api.store(mind, as_agent=True, key="later", expires_at=clock.to_iso(moving_clock() + timedelta(days=3)))
    api.store(other, as_agent=True, key="elsewhere", expires_at=in_2h)
    # When the hourly run goes twice
    first = producers.publish_expiring()
    moving_clock.advance(3600)
    second = producers.publish_expiring()
    outbox.worker.run_once()
    # Then only the memory within 24 h of its expiry is announced, once, for the subscribed mind only
    assert (first["messages"], second["messages"]) == (1, 0)
    bodies = payloads(receiver.got("/expiring"))
    assert [(b["type"], b["data"]["memory"]["id"]) for b in bodies] == [("memory.expiring", soon["id"])]
    # And a new expiry time is a new announcement
    later = clock.to_iso(moving_clock() + timedelta(hours=5))
    assert (
        api.call("PUT", f"/memory/{soon['id']}", json_body={"expires_at": later}, **as_agent(mind)).status
        == 200
    )
    assert producers.publish_expiring()["messages"] == 1


# ---------------------------------------------------------------- management


def test_a_webhook_is_managed_by_its_owner_and_its_secret_is_shown_once(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    mind = api.create_mind()
    # When the owner subscribes
    created = api.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={"url": receiver.url("/hook"), "events": ["memory.created", "memory.created"]},
    )
    # Then the answer holds the secret, once; the list never does
    assert created.status == 201, created.text
    body = created.json()
    assert (
        body["secret"].startswith("whsec_")
        and body["events"] == ["memory.created"]
        and body["enabled"] is True
    )
    assert created.headers["Location"] == f"/minds/{mind.id}/webhooks/{body['id']}"
    listed = api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt)
    assert (
        listed.status == 200
        and body["secret"] not in listed.text
        and "secret" not in listed.json()["webhooks"][0]
    )
    # When it changes the events and url, then deletes it
    path = f"/minds/{mind.id}/webhooks/{body['id']}"
    patched = api.call(
        "PATCH", path, token=mind.jwt, json_body={"events": ["memory.deleted"], "url": receiver.url("/b")}
    )
    assert patched.status == 200 and patched.json()["events"] == ["memory.deleted"]
    assert patched.json()["url"] == receiver.url("/b")
    assert api.call("DELETE", path, token=mind.jwt).status == 204
    # Then it is gone
    assert_error(api.call("DELETE", path, token=mind.jwt), 404)
    assert api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt).json()["webhooks"] == []


def test_webhooks_are_managed_with_a_jwt_only_and_only_on_ones_own_minds(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/hook"))
    stranger = jwt_for("user-2")
    api.create_mind(user="user-2")
    routes = [
        ("POST", f"/minds/{mind.id}/webhooks", {"url": receiver.url("/x"), "events": ["memory.created"]}),
        ("GET", f"/minds/{mind.id}/webhooks", None),
        ("PATCH", f"/minds/{mind.id}/webhooks/{webhook_id}", {"enabled": False}),
        ("POST", f"/minds/{mind.id}/webhooks/{webhook_id}/test", None),
        ("GET", f"/minds/{mind.id}/webhooks/{webhook_id}/deliveries", None),
        ("DELETE", f"/minds/{mind.id}/webhooks/{webhook_id}", None),
    ]
    for method, path, body in routes:
        # A Mind Key may not manage webhooks, even of its own mind
        assert_error(api.call(method, path, token=mind.key, json_body=body), 403)
        # Another user's mind is a 404, as if it did not exist
        assert_error(api.call(method, path, token=stranger, json_body=body), 404)
    # And nothing changed: the webhook is still there, enabled, and nobody was pinged
    assert (
        api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt).json()["webhooks"][0]["enabled"] is True
    )
    assert receiver.received == []


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://hooks.example.com/x", "events": []},
        {"url": "https://hooks.example.com/x", "events": ["memory.exploded"]},
        {"url": "https://hooks.example.com/x"},
        {"url": 42, "events": ["memory.created"]},
        {"url": "https://hooks.example.com/x", "events": ["memory.created"], "secret": "mine"},
    ],
)
def test_invalid_subscriptions_are_422(api: Api, dynamo: Any, body: dict[str, Any]) -> None:
    mind = api.create_mind()
    assert_error(api.call("POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body=body), 422)


def test_a_failed_test_ping_reports_the_outcome(api: Api, outbox: Outbox, receiver: Receiver) -> None:
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/teapot"))
    receiver.answer("/teapot", 418)
    answer = api.call("POST", f"/minds/{mind.id}/webhooks/{webhook_id}/test", token=mind.jwt)
    assert answer.status == 200
    assert answer.json()["delivered"] is False and answer.json()["status_code"] == 418
    assert answer.json()["error"] == "HTTP 418"
    assert [(d["event_type"], d["state"]) for d in deliveries(api, mind, webhook_id)] == [("ping", "failed")]


def test_a_webhook_url_with_non_ascii_characters_is_called_percent_encoded(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    # Given a webhook whose URL's path and query hold characters outside ASCII
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/empfänger?für=zoë"))
    # When it is pinged, and an event goes to it
    ping = api.call("POST", f"/minds/{mind.id}/webhooks/{webhook_id}/test", token=mind.jwt)
    api.store(mind, as_agent=True)
    outbox.drain()
    # Then both reach the receiver, the URL percent-encoded as UTF-8 (not a 500, not a dead event)
    assert ping.status == 200 and ping.json()["delivered"] is True, ping.text
    got = receiver.got("/empf%C3%A4nger?f%C3%BCr=zo%C3%AB")
    assert [json.loads(r.body)["type"] for r in got] == ["ping", "memory.created"]


def test_a_patch_racing_the_minds_deletion_is_a_404_and_leaves_the_webhook_to_ttl(
    api: Api, outbox: Outbox, receiver: Receiver, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a webhook whose mind is deleted right after a PATCH found it
    mind = api.create_mind()
    webhook_id, _ = subscribe(api, mind, receiver.url("/raced"))
    found = subscriptions.owned

    def found_then_mind_deleted(owner: str, mind_id: str, webhook_id: str) -> Any:
        subscription = found(owner, mind_id, webhook_id)
        mind_deletion.delete_mind(owner, mind_id)
        return subscription

    monkeypatch.setattr(subscriptions, "owned", found_then_mind_deleted)
    # When the PATCH writes
    answer = api.call(
        "PATCH", f"/minds/{mind.id}/webhooks/{webhook_id}", token=mind.jwt, json_body={"enabled": False}
    )
    # Then it is a 404, and the deleted mind's webhook keeps the TTL its deletion gave it
    assert_error(answer, 404)
    (left,) = [i for i in scan(dynamo, MINDS) if i["sk"] == f"WEBHOOK#{webhook_id}"]
    assert left["enabled"] is True and left["ttl"] > clock.now().timestamp() + 24 * 3600
