"""Per-client throttling (issue 10 item 7): a fixed one-minute window per mind and per inbound hook,
counted in DynamoDB, answering 429 with Retry-After in the error envelope; off unless configured."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.core.settings import get_limits
from synapse.webhooks import signing

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan

START = datetime(2026, 3, 1, 12, 0, 10, tzinfo=UTC)  # 10 s into a minute: 50 s of it left


class FakeClock:
    def __init__(self) -> None:
        self.moment = START

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    moved = FakeClock()
    monkeypatch.setattr(clock, "now", moved)
    return moved


def recall(api: Api, mind: MindHandle, agent: bool = True) -> HttpResponse:
    return api.call("GET", "/memory/recall", **(as_agent(mind) if agent else as_user(mind)))


def rate_items(dynamo: Any) -> list[dict[str, Any]]:
    return [i for i in scan(dynamo, MINDS) if str(i["pk"]).startswith("RATE#")]


def test_a_mind_over_its_rate_gets_429_with_the_rest_of_the_minute_as_retry_after(
    api: Api, dynamo: Any, configure: Configure, fake_clock: FakeClock
) -> None:
    # Given 3 memory requests a minute per mind, and two minds
    configure(SYNAPSE_MIND_RATE_LIMIT="3")
    mind, other = api.create_mind(), api.create_mind(user="user-2")
    # When the mind's agent and owner together send 4 requests within the minute
    answers = [recall(api, mind), recall(api, mind, agent=False), recall(api, mind), recall(api, mind)]
    # Then the first 3 are served and the 4th is a 429 in the envelope, to come back when the minute ends
    assert [a.status for a in answers[:3]] == [200, 200, 200]
    assert_error(answers[3], 429)
    assert answers[3].headers["Retry-After"] == "50"
    # And another mind is not affected
    assert recall(api, other).status == 200
    # And the next minute starts afresh
    fake_clock.advance(50)
    assert recall(api, mind).status == 200


def test_a_refused_request_costs_nothing_and_the_windows_expire(
    api: Api, dynamo: Any, configure: Configure, fake_clock: FakeClock
) -> None:
    # Given a limit of 1 a minute
    configure(SYNAPSE_MIND_RATE_LIMIT="1")
    mind = api.create_mind()
    # When 5 requests come in one minute
    statuses = [api.store(mind, as_agent=True, key=f"fact_{i}").status for i in range(5)]
    # Then one is served, and the window's item counts only what was admitted
    assert statuses == [201, 429, 429, 429, 429]
    (window,) = rate_items(dynamo)
    assert window["n"] == 1
    # And DynamoDB's TTL removes the window soon after it ends
    assert 0 < window["ttl"] - int(START.timestamp()) <= 120
    # And none of the refused ones wrote anything
    fake_clock.advance(60)
    assert len(api.call("GET", "/memory", **as_user(mind)).json()["memories"]) == 1


def test_rate_limits_are_off_unless_configured(api: Api, dynamo: Any) -> None:
    # Given no SYNAPSE_MIND_RATE_LIMIT (the local default)
    mind = api.create_mind()
    # When a mind is read many times
    assert all(recall(api, mind).status == 200 for _ in range(30))
    # Then nothing was counted
    assert rate_items(dynamo) == []


def _hook(api: Api, mind: MindHandle) -> tuple[str, str]:
    answer = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={"label": "platform"})
    return answer.json()["id"], answer.json()["secret"]


def _deliver(api: Api, hook_id: str, secret: str, key: str) -> HttpResponse:
    payload = json.dumps(memory_body(key=key)).encode()
    signature = signing.header_value([secret], payload, int(START.timestamp()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    return api.call("POST", f"/hooks/{hook_id}", raw_body=payload, headers=headers)


def test_a_hook_over_its_rate_gets_429_and_only_signed_deliveries_count(
    api: Api, dynamo: Any, configure: Configure, fake_clock: FakeClock
) -> None:
    # Given 2 deliveries a minute per hook, and two hooks
    configure(SYNAPSE_HOOK_RATE_LIMIT="2")
    mind = api.create_mind()
    (hook, secret), (other, other_secret) = _hook(api, mind), _hook(api, mind)
    # When strangers post badly signed deliveries, then the platform sends 3 signed ones
    assert [_deliver(api, hook, "wrong-secret", "x").status for _ in range(5)] == [401] * 5
    answers = [_deliver(api, hook, secret, f"fact_{i}") for i in range(3)]
    # Then the strangers used none of the hook's minute: 2 are stored, the 3rd is a 429
    assert [a.status for a in answers[:2]] == [200, 200]
    assert_error(answers[2], 429)
    assert answers[2].headers["Retry-After"] == "50"
    # And another hook is not affected, and the next minute starts afresh
    assert _deliver(api, other, other_secret, "other").status == 200
    fake_clock.advance(60)
    assert _deliver(api, hook, secret, "later").status == 200


@pytest.mark.parametrize("value", ["-1", "ten", "1.5", "²"])
def test_a_rate_that_is_not_a_whole_number_is_refused(configure: Configure, value: str) -> None:
    configure(SYNAPSE_MIND_RATE_LIMIT=value)
    with pytest.raises(RuntimeError, match="SYNAPSE_MIND_RATE_LIMIT"):
        get_limits()
