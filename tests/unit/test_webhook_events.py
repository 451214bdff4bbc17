"""Stream records → webhook events, stable event ids, the retry schedule (pure code), and one POST."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from synapse.memory import events
from synapse.webhooks import delivery, ssrf, transport

from tests.support.events import EVENTS_DIR, EXAMPLE_MIND_ID


def sample_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads((EVENTS_DIR / "webhook_events.json").read_text())["Records"]
    return records


def test_insert_modify_to_verified_and_remove_become_their_events() -> None:
    insert, verify, remove = sample_records()
    assert [c.type for c in events.from_stream_record(insert)] == ["memory.created"]
    assert [c.type for c in events.from_stream_record(verify)] == ["memory.updated", "memory.verified"]
    assert [c.type for c in events.from_stream_record(remove)] == ["memory.deleted"]
    created = events.from_stream_record(insert)[0]
    assert created.mind_id == EXAMPLE_MIND_ID and created.created_at == "2026-11-30T08:00:01.000Z"
    assert created.data["memory"]["id"] == "mem_exampleMemory000000000" and "previous" not in created.data
    updated = events.from_stream_record(verify)[0]
    assert updated.data["previous"]["verified"] is False and updated.data["memory"]["verified"] is True


def test_a_modify_of_an_already_verified_memory_is_only_an_update() -> None:
    _, verify, _ = sample_records()
    again = json.loads(json.dumps(verify))
    again["dynamodb"]["OldImage"] = json.loads(json.dumps(again["dynamodb"]["NewImage"]))
    seen = int(again["dynamodb"]["OldImage"]["version"]["N"])
    again["dynamodb"]["NewImage"]["version"] = {"N": str(seen + 1)}
    assert [c.type for c in events.from_stream_record(again)] == ["memory.updated"]


def test_a_modify_that_keeps_the_version_only_marks_a_proposal_and_makes_no_event() -> None:
    # Given a memory item rewritten at the same version (a proposal's pending mark set or cleared)
    _, verify, _ = sample_records()
    marked = json.loads(json.dumps(verify))
    marked["dynamodb"]["OldImage"] = json.loads(json.dumps(marked["dynamodb"]["NewImage"]))
    marked["dynamodb"]["NewImage"]["pending_proposal"] = {"S": "prop_0006448e0f5c0000exampleProp"}
    # Then no memory event goes out
    assert events.from_stream_record(marked) == []


def test_items_that_are_not_memories_make_no_events() -> None:
    insert = sample_records()[0]
    for sk in ("ID#mem_x", "TAG#03:abc#2#1#mem_x", "NCAT#fact"):
        other = json.loads(json.dumps(insert))
        other["dynamodb"]["Keys"]["sk"]["S"] = sk
        assert events.from_stream_record(other) == []


def test_event_ids_are_stable_per_record_and_subscription() -> None:
    insert = sample_records()[0]
    first, replayed = events.from_stream_record(insert)[0], events.from_stream_record(insert)[0]
    assert first.event_id("wh_a") == replayed.event_id("wh_a")
    assert first.event_id("wh_a") != first.event_id("wh_b")
    body = first.payload("wh_a")
    assert set(body) == {"id", "type", "created_at", "mind_id", "data"} and body["id"].startswith("evt_")


def test_memory_expiring_is_one_event_per_memory_and_expiry_time() -> None:
    at = datetime(2026, 11, 30, 9, tzinfo=UTC)
    memory = {"id": "mem_1", "expires_at": "2026-12-01T08:00:00.000Z"}
    moved = {**memory, "expires_at": "2026-12-01T09:00:00.000Z"}
    same = events.expiring("m_1", memory, at).event_id("wh_a")
    assert same == events.expiring("m_1", memory, datetime(2026, 11, 30, 10, tzinfo=UTC)).event_id("wh_a")
    assert same != events.expiring("m_1", moved, at).event_id("wh_a")


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    for seed in range(200):
        rng = random.Random(seed)
        delays = [delivery.backoff_seconds(attempt, rng) for attempt in range(1, 16)]
        # each wait lies in [ceiling / 2, ceiling] for a ceiling of 30 s doubling per attempt, capped
        for attempt, delay in enumerate(delays, start=1):
            ceiling = min(delivery.MAX_DELAY_SECONDS, 30 * 2 ** (attempt - 1))
            assert ceiling // 2 <= delay <= ceiling
        # and no wait is shorter than the one before, up to the first capped one
        capped = next(i for i in range(15) if 30 * 2**i >= delivery.MAX_DELAY_SECONDS)
        assert delays[: capped + 1] == sorted(delays[: capped + 1])
        assert all(delays[capped - 1] <= d for d in delays[capped:])
    assert 4 * 3600 <= delivery.MAX_DELAY_SECONDS <= 5 * 3600
    jittered = {delivery.backoff_seconds(4, random.Random(seed)) for seed in range(50)}
    assert len(jittered) > 10


def test_a_receiver_trickling_its_answer_cannot_hold_a_post_past_its_timeout() -> None:
    # Given a receiver that answers a byte at a time, each well within the per-read timeout
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def trickle() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            try:
                for _ in range(30):
                    time.sleep(0.1)
                    connection.sendall(b"z")
                connection.sendall(b"\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass  # the sender hung up

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    target = ssrf.Target(f"http://127.0.0.1:{port}/", "http", "127.0.0.1", port, "/", ("127.0.0.1",))
    # When a POST with a 0.5 s timeout goes to it
    # Then the whole exchange is bounded by the timeout: it times out rather than wait for the answer
    with pytest.raises(TimeoutError):
        transport.post(target, b"{}", {"Content-Type": "application/json"}, timeout=0.5)
    thread.join(5)
    server.close()


def test_a_host_whose_addresses_hang_cannot_stretch_a_post_past_its_timeout() -> None:
    # Given a host whose first addresses never take the connection (a full backlog drops the
    # handshake) and whose last one answers at once
    answering = socket.create_server(("127.0.0.1", 0))
    port = answering.getsockname()[1]
    hanging = socket.create_server(("127.0.0.2", port), backlog=0)
    queued = socket.create_connection(("127.0.0.2", port))  # fills the backlog

    def answer() -> None:
        connection, _ = answering.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    addresses = ("127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.1")
    target = ssrf.Target(f"http://h.example:{port}/", "http", "h.example", port, "/", addresses)
    # When a POST with a 0.5 s timeout goes to it
    # Then the timeout bounds the whole attempt: the slow addresses use it up, nothing is reached
    with pytest.raises(TimeoutError):
        transport.post(target, b"{}", {"Content-Type": "application/json"}, timeout=0.5)
    for sock in (queued, hanging, answering):
        sock.close()
    thread.join(1)


def test_a_memory_event_carries_its_occurred_at() -> None:
    from synapse.memory.items import memory_item

    from tests.support.memories import a_memory
    from tests.support.streams import stream_record

    # Given a memory about a day, written and then moved to a moment
    before = a_memory("m_x")._replace(occurred_at="2026-12-09")
    after = before._replace(occurred_at="2026-12-10T09:00:00.000Z", version=2)
    # When the stream's records become events
    (created,) = events.from_stream_record(stream_record(memory_item(before)))
    (updated,) = events.from_stream_record(stream_record(memory_item(after), memory_item(before)))
    # Then the events' memories say when it happened, and the update what it was before
    assert created.data["memory"]["occurred_at"] == "2026-12-09"
    assert updated.data["memory"]["occurred_at"] == "2026-12-10T09:00:00.000Z"
    assert updated.data["previous"]["occurred_at"] == "2026-12-09"
