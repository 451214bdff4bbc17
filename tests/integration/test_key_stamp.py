"""No write on the read path (issue 14 part 4): a Mind Key's `last_used_at` is written only when the
value the authorizer has just read is older than the resolution (a minute), so a steady agent's
requests cost no write, and two GetItems each: the key's lookup, and the member item of the person who
created it (a key ends with its creator's tenure as owner, `teams.tenure`); a hook's
`last_delivery_at` likewise."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from synapse.auth.authorizer import authorize
from synapse.minds import keys
from synapse.storage import tables

from tests.integration.test_hooks import Hook, create_hook, deliver
from tests.support.api import Api, MindHandle, memory_body
from tests.support.clock import MovableClock
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.races import dynamodb_hook

RESOLUTION = tables.USAGE_STAMP_PERIOD.total_seconds()


@pytest.fixture
def mind(api: Api, movable_clock: MovableClock) -> MindHandle:
    return api.create_mind("alice")


@contextmanager
def dynamodb_calls() -> Iterator[Counter[str]]:
    """Counts the block's DynamoDB calls by operation; `stamp` counts the usage stamps written
    (last_used_at, last_delivery_at)."""
    counted: Counter[str] = Counter()

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        counted[model.name] += 1
        if params.get("ExpressionAttributeNames", {}).get("#stamp") in ("last_used_at", "last_delivery_at"):
            counted["stamp"] += 1

    with dynamodb_hook("before-parameter-build.dynamodb", record):
        yield counted


def authorize_key(key: str) -> dict[str, Any]:
    verdict = authorize({"headers": {"Authorization": f"Bearer {key}"}})
    context: dict[str, Any] = verdict["context"]
    assert context["source"] == "agent", context
    return context


def last_used(api: Api, mind: MindHandle) -> str | None:
    keys = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]
    stamp: str | None = next(key for key in keys if key["id"] == mind.key_id)["last_used_at"]
    return stamp


def test_a_steady_agent_costs_one_read_and_no_write_per_request(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a key used once (its first use is stamped)
    with dynamodb_calls() as first:
        authorize_key(mind.key)
    assert first == Counter(
        {"GetItem": 2, "UpdateItem": 2, "stamp": 2}
    )  # the lookup's copy and the listed item
    # When it is used 50 times more within the resolution
    with dynamodb_calls() as steady:
        for _ in range(50):
            authorize_key(mind.key)
            movable_clock.advance(seconds=RESOLUTION / 60)  # 50 s in all
    # Then each request is two GetItems (the key's lookup, its creator's member item) and none writes
    assert steady == Counter({"GetItem": 100})


def test_a_request_after_the_resolution_stamps_once_then_none_again(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a key last stamped at the start
    authorize_key(mind.key)
    stamped = last_used(api, mind)
    assert stamped is not None
    # When a minute and a second pass and the agent sends three requests
    movable_clock.advance(seconds=RESOLUTION + 1)
    with dynamodb_calls() as later:
        for _ in range(3):
            authorize_key(mind.key)
    # Then only the first writes, once for each of the two items
    assert later == Counter({"GetItem": 6, "UpdateItem": 2, "stamp": 2})
    # And the listing shows the new time
    newer = last_used(api, mind)
    assert newer is not None and newer > stamped


def test_requests_through_the_api_send_no_stamp_within_the_resolution(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given an agent that has been seen
    assert api.call("GET", "/memory/recall", token=mind.key).status == 200
    # When it recalls and lists 20 times within the minute
    with dynamodb_calls() as steady:
        for _ in range(10):
            assert api.call("GET", "/memory/recall", token=mind.key).status == 200
            assert api.call("GET", "/memory", token=mind.key).status == 200
    # Then no request wrote last_used_at
    assert steady["stamp"] == 0, steady
    # And once the minute has passed, the next request writes it once
    movable_clock.advance(seconds=RESOLUTION + 1)
    with dynamodb_calls() as after:
        assert api.call("GET", "/memory/recall", token=mind.key).status == 200
        assert api.call("GET", "/memory/recall", token=mind.key).status == 200
    assert after["stamp"] == 2, after


def test_a_key_from_before_the_copy_is_stamped_once_then_reads_only(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a key whose lookup item has no copy of last_used_at, as keys made before it had
    authorize_key(mind.key)
    lookup = next(
        item
        for item in dynamo.scan(TableName="test-minds")["Items"]
        if item["pk"]["S"].startswith("KEYHASH#")
    )
    dynamo.update_item(
        TableName="test-minds",
        Key={"pk": lookup["pk"], "sk": lookup["sk"]},
        UpdateExpression="REMOVE last_used_at",
    )
    # When it is used twice
    with dynamodb_calls() as calls:
        authorize_key(mind.key)
        authorize_key(mind.key)
    # Then the first writes the copy (and tries the listed item, which holds this minute's stamp and
    # refuses by its condition), the second writes nothing
    assert calls == Counter({"GetItem": 4, "UpdateItem": 2, "stamp": 2})
    with dynamodb_calls() as steady:
        authorize_key(mind.key)
    assert steady == Counter({"GetItem": 2})


def test_a_stamp_never_revives_a_revoked_key(api: Api, mind: MindHandle, movable_clock: MovableClock) -> None:
    # Given a key read by the authorizer, then revoked before it stamps (the read came first)
    lookup = tables.get(tables.minds_table(), tables.key_hash_key(keys.hash_mind_key(mind.key)))
    assert lookup is not None
    assert api.call("DELETE", f"/minds/{mind.id}/keys/{mind.key_id}", token=mind.jwt).status == 204
    # When the stamp is written
    keys._stamp_if_stale(lookup)
    # Then neither item is back: the key stays revoked
    assert tables.get(tables.minds_table(), tables.key_hash_key(lookup["hash"])) is None
    assert tables.get(tables.minds_table(), tables.mind_key_item_key(mind.id, mind.key_id)) is None
    assert authorize({"headers": {"x-mind-key": mind.key}})["context"].get("error")


# ---------------------------------------------------------------- a hook's last_delivery_at


def test_a_steady_hook_stamps_its_deliveries_once_a_minute(
    api: Api, mind: MindHandle, movable_clock: MovableClock
) -> None:
    # Given a hook that has delivered once (stamped on the lookup it reads and on the listed hook)
    hook = create_hook(api, mind)

    def deliver_now(key: str) -> int:  # signed at the test's clock, which the service reads
        return deliver(api, hook, memory_body(key=key), at=int(movable_clock.at.timestamp())).status

    assert deliver_now("first") == 200
    first = listed_hook(api, mind, hook)["last_delivery_at"]
    assert first is not None
    # When it delivers again within the minute
    with dynamodb_calls() as calls:
        assert deliver_now("second") == 200
    # Then no stamp is written, not even a refused conditional one
    assert calls["stamp"] == 0
    # And a minute later the next delivery stamps both items again
    movable_clock.advance(seconds=RESOLUTION + 1)
    with dynamodb_calls() as later:
        assert deliver_now("third") == 200
    assert later["stamp"] == 2
    assert listed_hook(api, mind, hook)["last_delivery_at"] > first


def listed_hook(api: Api, mind: MindHandle, hook: Hook) -> dict[str, Any]:
    hooks = api.call("GET", f"/minds/{mind.id}/hooks", token=mind.jwt).json()["hooks"]
    found: dict[str, Any] = next(item for item in hooks if item["id"] == hook.id)
    return found
