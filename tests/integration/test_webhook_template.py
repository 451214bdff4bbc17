"""The webhook functions' sample events (events/*.json), filled with real ids, are served by their
handlers, and every DynamoDB call they make is granted by their policy in template.yaml."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.webhooks import delivery_queue, transport

from infra import template
from infra.gateway import LambdaContext, load_handler
from infra.local_queue import LocalQueue
from tests.integration.test_template import (
    _authorizer_logical_id,
    _dynamodb_calls,
    _not_granted,
    _route_of,
    _seed,
)
from tests.support import events
from tests.support.api import Api

HTTP_SAMPLES = {
    "create_webhook": 201,
    "list_webhooks": 200,
    "update_webhook": 200,
    "delete_webhook": 204,
    "test_webhook": 200,
    "list_deliveries": 200,
}
PUBLIC_ADDRESS = "93.184.215.14"


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalQueue]:
    """Every hostname resolves to a public address, receivers answer 200 without a network, and
    queued messages land in an in-process queue."""

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_ADDRESS, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(transport, "post", lambda *args, **kwargs: 200)
    queue = LocalQueue()
    delivery_queue.install(queue)
    yield queue
    delivery_queue.install(None)


def _seed_webhook(api: Api, events_wanted: list[str]) -> dict[str, str]:
    replacements = _seed(api).replacements
    mind_id = replacements[events.EXAMPLE_MIND_ID]
    created = api.call(
        "POST",
        f"/minds/{mind_id}/webhooks",
        token=replacements[events.EXAMPLE_JWT],
        json_body={"url": "https://agents.example.com/synapse/events", "events": events_wanted},
    )
    assert created.status == 201, created.text
    return {**replacements, events.EXAMPLE_WEBHOOK_ID: created.json()["id"]}


def _function_of(directory: str) -> tuple[str, Any]:
    for name, resource in template.resources("AWS::Serverless::Function").items():
        if resource["Properties"]["CodeUri"].rstrip("/").endswith(directory):
            code = template.ROOT / resource["Properties"]["CodeUri"]
            return name, load_handler(code, resource["Properties"].get("Handler", "app.handler"))
    raise LookupError(directory)


@pytest.mark.parametrize("name", sorted(HTTP_SAMPLES))
def test_webhook_samples_are_served_within_their_policies(api: Api, outside: LocalQueue, name: str) -> None:
    # Given the sample with the ids of a real mind, memory and webhook
    event = events.fill(events.load(name), _seed_webhook(api, ["memory.created"]))
    # When the authorizer and the handler serve it
    authorizer = load_handler(*template.authorizer_function())
    with _dynamodb_calls() as authorizer_needs:
        verdict = authorizer(events.without_authorizer(event), LambdaContext("authorizer"))
    assert verdict["isAuthorized"] is True
    route = _route_of(name)
    with _dynamodb_calls() as handler_needs:
        result = load_handler(route.code_dir, route.handler)(event, LambdaContext(route.function))
    # Then it succeeds, touching DynamoDB only as its policy allows
    assert result["statusCode"] == HTTP_SAMPLES[name], result["body"]
    assert _not_granted(_authorizer_logical_id(), authorizer_needs) == []
    assert handler_needs and _not_granted(route.function, handler_needs) == []


def test_the_stream_sample_queues_its_events_within_policy(api: Api, outside: LocalQueue) -> None:
    # Given a webhook for every memory event and the producer's sample (insert, verify, remove)
    ids = _seed_webhook(api, ["memory.created", "memory.updated", "memory.verified", "memory.deleted"])
    event = events.fill(events.load("webhook_events"), ids)
    function, handler = _function_of("webhook_events")
    # When the producer gets it
    with _dynamodb_calls() as needs:
        answer = handler(event, LambdaContext(function))
    # Then four events are queued for the webhook, and nothing failed
    assert answer == {"batchItemFailures": []}
    queued = [json.loads(m.body)["event"]["type"] for m in outside.sent]
    assert queued == ["memory.created", "memory.updated", "memory.verified", "memory.deleted"]
    assert needs and _not_granted(function, needs) == []


def test_the_queue_sample_is_delivered_within_policy(api: Api, outside: LocalQueue) -> None:
    ids = _seed_webhook(api, ["memory.created"])
    event = events.fill(events.load("deliver_webhook"), ids)
    function, handler = _function_of("deliver_webhook")
    with _dynamodb_calls() as needs:
        answer = handler(event, LambdaContext(function))
    assert answer == {"batchItemFailures": []}
    assert outside.sent == [] and outside.dead == []
    assert needs and _not_granted(function, needs) == []


def test_the_schedule_sample_announces_expiring_memories_within_policy(api: Api, outside: LocalQueue) -> None:
    ids = _seed_webhook(api, ["memory.expiring"])
    soon = clock.to_iso(clock.now() + timedelta(hours=3))
    api.call(
        "POST",
        "/memory",
        token=ids[events.EXAMPLE_MIND_KEY],
        json_body={"category": "context", "key": "trip", "content": "In Rome", "expires_at": soon},
    )
    function, handler = _function_of("expiring_events")
    with _dynamodb_calls() as needs:
        tally = handler(events.load("expiring_events"), LambdaContext(function))
    assert tally["messages"] == 1 and tally["failed_minds"] == 0
    assert needs and _not_granted(function, needs) == []
