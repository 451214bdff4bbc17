"""The inbound-hook sample events (events/*hook*.json) are served by their handlers, within the
policies template.yaml gives those functions — the same audit test_template runs for the others,
with a real hook behind the placeholders and the delivery sample signed afresh with its secret."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.webhooks import signing

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.integration.test_template import _authorizer_logical_id, _dynamodb_calls, _not_granted, _route_of
from tests.support import events
from tests.support.api import Api, jwt_for

EXPECTED_STATUS = {
    "create_hook": 201,
    "list_hooks": 200,
    "delete_hook": 204,
    "rotate_hook_secret": 200,
    "receive_hook": 200,
}


def _real_ids(api: Api) -> dict[str, str]:
    mind = api.create_mind(user=events.EXAMPLE_USER)
    hook = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={"label": "sample"})
    assert hook.status == 201, hook.text
    return {
        events.EXAMPLE_JWT: jwt_for(events.EXAMPLE_USER),
        events.EXAMPLE_MIND_ID: mind.id,
        events.EXAMPLE_HOOK_ID: hook.json()["id"],
        events.EXAMPLE_HOOK_SECRET: hook.json()["secret"],
    }


def _signed_now(event: dict[str, Any], secret: str) -> dict[str, Any]:
    """The sample delivery re-signed now: its fixed request time is far outside the tolerance."""
    event["headers"]["synapse-signature"] = signing.header_value([secret], event["body"].encode())
    return event


def test_the_delivery_sample_is_signed_over_its_body_with_the_example_secret() -> None:
    event = events.load("receive_hook")
    assert "authorization" not in event["headers"] and "authorizer" not in event["requestContext"]
    signed_at = signing.verify(
        event["headers"]["synapse-signature"],
        event["body"].encode(),
        [events.EXAMPLE_HOOK_SECRET],
        now=events.REQUEST_EPOCH_MS // 1000,
    )
    assert signed_at == events.REQUEST_EPOCH_MS // 1000
    assert len(json.loads(event["body"])["memories"]) == 2


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUS))
def test_hook_sample_with_real_ids_is_served_within_its_policy(api: Api, name: str) -> None:
    # Given the sample, its placeholders filled with a real mind and hook
    ids = _real_ids(api)
    event = events.fill(events.load(name), ids)
    route = _route_of(name)
    if route.authorized:
        # When the authorizer reads its credential, Then it grants the sample's principal
        authorizer = load_handler(*template.authorizer_function())
        with _dynamodb_calls() as authorizer_needs:
            verdict = authorizer(events.without_authorizer(event), LambdaContext("authorizer"))
        assert verdict == {"isAuthorized": True, "context": event["requestContext"]["authorizer"]["lambda"]}
        assert _not_granted(_authorizer_logical_id(), authorizer_needs) == []
    else:
        event = _signed_now(event, ids[events.EXAMPLE_HOOK_SECRET])
    # When its function answers it
    with _dynamodb_calls() as handler_needs:
        result = load_handler(route.code_dir, route.handler)(event, LambdaContext(route.function))
    # Then it succeeds, using only DynamoDB calls its policy grants
    assert result["statusCode"] == EXPECTED_STATUS[name], result["body"]
    assert handler_needs, "the sample reached DynamoDB"
    assert _not_granted(route.function, handler_needs) == [], f"{route.function}'s policy lacks these"


def test_the_delivery_sample_replayed_is_answered_within_the_same_policy(api: Api) -> None:
    # Given the delivery sample, applied once
    ids = _real_ids(api)
    route = _route_of("receive_hook")
    handler = load_handler(route.code_dir, route.handler)
    secret = ids[events.EXAMPLE_HOOK_SECRET]
    first = handler(_signed_now(events.fill(events.load("receive_hook"), ids), secret), LambdaContext("r"))
    assert first["statusCode"] == 200, first["body"]
    # When the sender retries it with the same Idempotency-Key, signed anew
    retry = _signed_now(events.fill(events.load("receive_hook"), ids), secret)
    with _dynamodb_calls() as needs:
        again = handler(retry, LambdaContext(route.function))
    # Then the first answer comes back, read within the function's policy
    assert again["statusCode"] == 200 and json.loads(again["body"]) == json.loads(first["body"])
    assert again["headers"].get("Idempotent-Replayed") == "true"
    assert _not_granted(route.function, needs) == []
