"""Outbound webhooks on `make run`: with the loopback opt-in, the runner's stream pump feeds the
webhook producer and its in-process queue delivers signed events to a receiver on 127.0.0.1;
without it, a loopback URL is refused. That a restart replays no events for the memories it finds
again is checked on test_demo.py's restart (a pair of starts shared with the demo and the data)."""

from __future__ import annotations

import json
import time

import pytest
from synapse.webhooks import signing

from tests.e2e.conftest import Http
from tests.support.receiver import Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.runner import RunningService


@pytest.fixture
def opted_in(loopback_runner: RunningService) -> RunningService:
    """The process's runner with the loopback opt-in (tests/conftest.py), shared with the client tests."""
    return loopback_runner


def test_a_stored_memory_reaches_a_loopback_receiver_signed(
    opted_in: RunningService, receiver: Receiver
) -> None:
    # Given a mind with a webhook on a receiver on 127.0.0.1
    http = Http(opted_in.url)
    mind = http.create_mind(opted_in.jwt)
    created = http.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={"url": receiver.url("/synapse"), "events": ["memory.created", "memory.deleted"]},
    )
    assert created.status_code == 201, created.text
    secret = created.json()["secret"]
    # When an agent stores a memory and deletes it
    stored = http.call(
        "POST", "/memory", token=mind.key, json_body={"category": "fact", "key": "k", "content": "c"}
    )
    assert stored.status_code == 201, stored.text
    assert http.call("DELETE", f"/memory/{stored.json()['id']}", token=mind.key).status_code == 204
    # Then both events arrive, signed with the webhook's secret
    assert receiver.wait_for("/synapse", 2, timeout=20), opted_in.output()[-2000:]
    got = receiver.got("/synapse")
    for request in got:
        signing.verify(request.headers["synapse-signature"], request.body, [secret])
    assert sorted(json.loads(r.body)["type"] for r in got) == ["memory.created", "memory.deleted"]
    # And the deliveries are listed (logged once the receiver has answered, a moment after it got them)
    deliveries = f"/minds/{mind.id}/webhooks/{created.json()['id']}/deliveries"
    deadline = time.monotonic() + 10
    while True:
        listed = http.call("GET", deliveries, token=mind.jwt)
        states = {d["state"] for d in listed.json()["deliveries"]} if listed.status_code == 200 else set()
        if states == {"delivered"} or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert listed.status_code == 200 and states == {"delivered"}, listed.text


def test_without_the_opt_in_a_loopback_receiver_is_refused(
    http: Http, runner: RunningService, receiver: Receiver
) -> None:
    mind = http.create_mind(runner.jwt)
    answer = http.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={
            "url": receiver.url("/synapse").replace("http://", "https://"),
            "events": ["memory.created"],
        },
    )
    assert answer.status_code == 422, answer.text
    assert "loopback" in answer.json()["error"]["message"]
