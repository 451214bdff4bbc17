"""Races only DynamoDB shows (issue 10): limits held by counts inside the creating transaction,
TransactionConflict retried then a 409 with Retry-After (never a 500), and a transaction applied but
answered too late, resent by botocore, that stays one write."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from synapse.minds import limits
from synapse.storage import tables

from tests.support.api import Api, MindHandle, jwt_for
from tests.support.checks import as_user, assert_error
from tests.support.races import dynamodb_hook, race
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan

PARALLEL = 30
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@dataclass
class Kind:
    """One thing a mind holds a limited number of, and how to make, list and drop one."""

    name: str
    maximum: int
    at_start: int  # a new mind comes with one Mind Key
    body: Callable[[int], dict[str, Any]]
    listed: str = field(default="")

    def path(self, mind: MindHandle) -> str:
        return f"/minds/{mind.id}/{self.name}"


KINDS = [
    Kind("keys", limits.MAX_KEYS_PER_MIND, 1, lambda i: {"label": f"agent {i}"}, "keys"),
    Kind("hooks", limits.MAX_HOOKS_PER_MIND, 0, lambda i: {"label": f"platform {i}"}, "hooks"),
    Kind(
        "webhooks",
        limits.MAX_WEBHOOKS_PER_MIND,
        0,
        lambda i: {"url": f"http://127.0.0.1:9/hook/{i}", "events": ["memory.created"]},
        "webhooks",
    ),
]


@pytest.fixture
def loopback(configure: Configure, dynamo: Any) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """tables.transact's backoff, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(tables, "BACKOFF", tables.Backoff(sleep=slept.append, jitter=lambda: 1.0))
    return slept


def listed(api: Api, mind: MindHandle, kind: Kind) -> list[dict[str, Any]]:
    answer = api.call("GET", kind.path(mind), token=mind.jwt, query={"limit": 100})
    assert answer.status == 200, answer.text
    assert answer.json()["next_cursor"] is None
    return list(answer.json()[kind.listed])


def mind_item(dynamo: Any, mind: MindHandle) -> dict[str, Any]:
    return next(i for i in scan(dynamo, MINDS) if i["pk"] == f"MIND#{mind.id}" and i["sk"] == "MIND")


# ---------------------------------------------------------------- limits under 30 parallel creates


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_30_parallel_creates_end_with_exactly_the_limit(
    api: Api, dynamo: Any, loopback: None, kind: Kind
) -> None:
    # Given a new mind
    mind = api.create_mind()
    # When 30 creates of one kind race each other
    answers = race(
        PARALLEL, lambda i: api.call("POST", kind.path(mind), token=mind.jwt, json_body=kind.body(i))
    )
    # Then exactly enough succeed to reach the limit, and every other is a 409 saying why
    created = [a for a in answers if a.status == 201]
    assert len(created) == kind.maximum - kind.at_start, [a.text for a in answers if a.status != 201][:3]
    refused = [assert_error(a, 409)["code"] for a in answers if a.status != 201]
    assert refused == ["limit_reached"] * (PARALLEL - len(created))
    # And the mind holds exactly the limit, as its list and its count say
    assert len(listed(api, mind, kind)) == kind.maximum
    assert mind_item(dynamo, mind)[f"{kind.name[:-1]}_count"] == kind.maximum


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_a_deletion_makes_room_for_exactly_one_more(
    api: Api, dynamo: Any, loopback: None, kind: Kind
) -> None:
    # Given a mind at its limit
    mind = api.create_mind()
    for i in range(kind.maximum - kind.at_start):
        assert api.call("POST", kind.path(mind), token=mind.jwt, json_body=kind.body(i)).status == 201
    one = listed(api, mind, kind)[-1]["id"]
    # When one is deleted twice at once, then two creates race
    deletes = race(2, lambda _: api.call("DELETE", f"{kind.path(mind)}/{one}", token=mind.jwt))
    creates = race(
        2, lambda i: api.call("POST", kind.path(mind), token=mind.jwt, json_body=kind.body(100 + i))
    )
    # Then one delete counted (the other found nothing), and one create took the room
    assert sorted(d.status for d in deletes) == [204, 404]
    assert sorted(c.status for c in creates) == [201, 409]
    assert len(listed(api, mind, kind)) == kind.maximum == mind_item(dynamo, mind)[f"{kind.name[:-1]}_count"]


def test_30_parallel_minds_end_with_exactly_the_per_user_limit(
    api: Api, dynamo: Any, configure: Configure
) -> None:
    # Given a user allowed 5 minds (SYNAPSE_MAX_MINDS_PER_USER)
    configure(SYNAPSE_MAX_MINDS_PER_USER="5")
    token = jwt_for("racer")
    # When they create 30 minds at once
    answers = race(
        PARALLEL, lambda i: api.call("POST", "/minds", token=token, json_body={"name": f"mind {i}"})
    )
    # Then 5 exist and 25 were refused with a 409
    assert sorted(a.status for a in answers) == [201] * 5 + [409] * 25
    assert {assert_error(a, 409)["code"] for a in answers if a.status == 409} == {"limit_reached"}
    minds = api.call("GET", "/minds", token=token, query={"limit": 100}).json()["minds"]
    assert len(minds) == 5
    # And deleting one makes room for one more; another user is not affected
    assert api.call("DELETE", f"/minds/{minds[0]['id']}", token=token).status == 204
    assert api.call("DELETE", f"/minds/{minds[0]['id']}", token=token).status == 404  # counted once
    made = [
        api.call("POST", "/minds", token=token, json_body={"name": f"again {i}"}).status for i in range(2)
    ]
    assert made == [201, 409]
    assert api.create_mind(user="someone-else").id


def test_a_mind_from_before_the_counts_is_counted_once_then_limited(
    api: Api, dynamo: Any, loopback: None
) -> None:
    # Given a mind written before counts existed: 3 keys, 2 webhooks, and no count on its item
    mind = api.create_mind()
    for i in range(2):
        api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": f"k{i}"})
        api.call("POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body=KINDS[2].body(i))
    dynamo.update_item(
        TableName=MINDS,
        Key=tables.dump(tables.mind_key(mind.id)),
        UpdateExpression="REMOVE key_count, hook_count, webhook_count",
    )
    # When 30 keys and 30 webhooks are created at once
    keys = race(PARALLEL, lambda i: api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={}))
    hooks = race(
        PARALLEL,
        lambda i: api.call(
            "POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body=KINDS[2].body(50 + i)
        ),
    )
    # Then the counts were rebuilt from what is there, and the limits hold exactly
    assert sum(a.status == 201 for a in keys) == limits.MAX_KEYS_PER_MIND - 3
    assert sum(a.status == 201 for a in hooks) == limits.MAX_WEBHOOKS_PER_MIND - 2
    item = mind_item(dynamo, mind)
    assert (item["key_count"], item["webhook_count"]) == (
        limits.MAX_KEYS_PER_MIND,
        limits.MAX_WEBHOOKS_PER_MIND,
    )


def test_a_user_from_before_the_counts_is_counted_from_their_minds(
    api: Api, dynamo: Any, configure: Configure
) -> None:
    # Given a user with 3 minds and no count of them (their minds predate counts)
    configure(SYNAPSE_MAX_MINDS_PER_USER="4")
    for i in range(3):
        api.create_mind(user="old-timer", name=f"mind {i}")
    dynamo.delete_item(TableName=MINDS, Key=tables.dump({"pk": "USER#old-timer", "sk": "MINDS"}))
    # When they create two more
    token = jwt_for("old-timer")
    made = [api.call("POST", "/minds", token=token, json_body={"name": f"new {i}"}).status for i in range(2)]
    # Then the first fits the limit of 4 and the second does not
    assert made == [201, 409]


# ---------------------------------------------------------------- TransactionConflict from DynamoDB


@dataclass
class Conflicts:
    """Answers the next `left` TransactWriteItems with a cancellation for TransactionConflict, as
    DynamoDB does when another transaction holds one of the items; records every token sent."""

    left: int
    tokens: list[str] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], **_: Any) -> Any:
        sent = json.loads(params["body"])
        self.tokens.append(sent["ClientRequestToken"])
        if self.left <= 0:
            return None
        self.left -= 1
        count = len(sent["TransactItems"])
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
        reasons += [{"Code": "None"}] * (count - 1)
        return _Http(400), {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 0},
        }


@dataclass
class _Http:
    status_code: int


@pytest.fixture
def conflicts() -> Iterator[Callable[[int], Conflicts]]:
    events = tables.client().meta.events
    made: list[Conflicts] = []

    def install(count: int) -> Conflicts:
        conflict = Conflicts(count)
        events.register_first("before-call.dynamodb.TransactWriteItems", conflict, unique_id="conflicts")
        made.append(conflict)
        return conflict

    yield install
    events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="conflicts")


def test_a_transaction_conflict_is_retried_with_a_new_token_and_succeeds(
    api: Api, dynamo: Any, no_sleep: list[float], conflicts: Callable[[int], Conflicts]
) -> None:
    # Given a mind whose item another transaction holds for the next 3 attempts
    mind = api.create_mind()
    conflict = conflicts(3)
    # When a key is created
    answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"})
    # Then it is retried after growing, jittered pauses, each a new transaction, and succeeds
    assert answer.status == 201, answer.text
    assert no_sleep == [0.025, 0.05, 0.1]
    assert len(conflict.tokens) == 4 and len(set(conflict.tokens)) == 4
    assert len(api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]) == 2


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/minds/{mind}/keys", {"label": "ci"}),
        ("POST", "/minds/{mind}/hooks", {"label": "ci"}),
        ("POST", "/minds/{mind}/webhooks", {"url": "http://127.0.0.1:9/x", "events": ["memory.created"]}),
        ("DELETE", "/minds/{mind}/keys/{key}", None),
        ("POST", "/memory", {"category": "fact", "key": "home_city", "content": "Berlin"}),
        ("POST", "/minds", {"name": "another"}),
    ],
)
def test_a_conflict_that_never_clears_is_a_409_with_retry_after_never_a_500(
    api: Api,
    dynamo: Any,
    loopback: None,
    no_sleep: list[float],
    conflicts: Callable[[int], Conflicts],
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    # Given a mind whose items other transactions hold through every retry
    mind = api.create_mind()
    conflicts(10_000)
    # When a write that needs a transaction is made
    answer = api.call(method, path.format(mind=mind.id, key=mind.key_id), json_body=body, **as_user(mind))
    # Then it ends, after the bounded retries, as a 409 the client may retry after Retry-After
    error = assert_error(answer, 409)
    assert error["code"] == "conflict"
    assert int(answer.headers["Retry-After"]) >= 1
    assert len(no_sleep) >= tables.BACKOFF.attempts - 1
    # And nothing was written
    conflicts(0)
    assert len(api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]) == 1


@dataclass
class Scripted:
    """Answers the next TransactWriteItems calls with these DynamoDB errors, then lets them through."""

    codes: list[str]
    tokens: list[str] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], **_: Any) -> Any:
        self.tokens.append(json.loads(params["body"])["ClientRequestToken"])
        if not self.codes:
            return None
        code = self.codes.pop(0)
        return _Http(500 if code == "InternalServerError" else 400), {
            "Error": {"Code": code, "Message": code},
            "ResponseMetadata": {"HTTPStatusCode": 500, "RetryAttempts": 3},
        }


@pytest.mark.parametrize(
    ("codes", "same_token"),
    [
        (["InternalServerError"], True),  # nobody knows whether it was applied: the same transaction
        (["TransactionInProgressException"], True),
        (["ProvisionedThroughputExceededException"], False),  # refused: a new transaction
        (["ThrottlingException"], False),
    ],
)
def test_a_resend_keeps_its_token_only_when_the_first_may_have_been_applied(
    api: Api, dynamo: Any, no_sleep: list[float], codes: list[str], same_token: bool
) -> None:
    # Given a mind, and DynamoDB failing the next transaction with this error
    mind = api.create_mind()
    script = Scripted(list(codes))
    with dynamodb_hook("before-call.dynamodb.TransactWriteItems", script):
        # When a key is created
        answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"})
    # Then it succeeds on the second attempt, under the first token only if that one may have landed
    assert answer.status == 201, answer.text
    assert len(script.tokens) == 2
    assert (script.tokens[0] == script.tokens[1]) is same_token


def test_a_write_never_confirmed_is_a_409_that_says_to_look_before_sending_again(
    api: Api, dynamo: Any, no_sleep: list[float]
) -> None:
    # Given DynamoDB that answers every transaction with a 500 (applied or not, nobody knows)
    mind = api.create_mind()
    script = Scripted(["InternalServerError"] * tables.BACKOFF.attempts)
    with dynamodb_hook("before-call.dynamodb.TransactWriteItems", script):
        answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"})
    # Then every attempt was the same transaction, and the client gets a 409, not a 500
    assert len(set(script.tokens)) == 1 and len(script.tokens) == tables.BACKOFF.attempts
    assert "read before sending it again" in assert_error(answer, 409)["message"]
    assert answer.headers["Retry-After"] == "2"


def test_dynamodb_shedding_load_on_a_read_is_a_429_with_retry_after(api: Api, dynamo: Any) -> None:
    # Given a mind, and DynamoDB throttling reads (after botocore's own resends)
    mind = api.create_mind()

    def throttled(**_: Any) -> Any:
        return _Http(400), {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
            "ResponseMetadata": {"HTTPStatusCode": 400, "RetryAttempts": 3},
        }

    with dynamodb_hook("before-call.dynamodb.GetItem", throttled):
        answer = api.call("GET", f"/minds/{mind.id}", token=mind.jwt)
    # Then the client is told to come back, not that the service broke
    assert_error(answer, 429)
    assert answer.headers["Retry-After"] == "1"


# ---------------------------------------------------------------- an applied transaction, resent


@dataclass
class LostAnswer:
    """Makes botocore resend the first TransactWriteItems after DynamoDB applied it, as it does when
    the answer never arrives in time (a read timeout): the same request, the same token."""

    lost: int = 1
    sent: list[str] = field(default_factory=list)

    def before_send(self, request: Any, **_: Any) -> None:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body)
        self.sent.append(body)

    def needs_retry(self, response: Any, attempts: int, **_: Any) -> float | None:
        if self.lost > 0 and response is not None and response[0].status_code == 200:
            self.lost -= 1
            return 0.0  # "no answer": resend now
        return None


@pytest.mark.parametrize(
    ("path", "body", "listing", "expected"),
    [
        ("/minds", {"name": "Resent"}, "/minds", 2),
        ("/minds/{mind}/keys", {"label": "resent"}, "/minds/{mind}/keys", 2),
        ("/minds/{mind}/hooks", {"label": "resent"}, "/minds/{mind}/hooks", 1),
        ("/memory", {"category": "fact", "key": "home_city", "content": "Berlin"}, "/memory", 1),
    ],
)
def test_a_transaction_applied_then_resent_by_botocore_is_one_write_and_a_2xx(
    api: Api, dynamo: Any, path: str, body: dict[str, Any], listing: str, expected: int
) -> None:
    # Given a user with a mind, and a TransactWriteItems whose answer will get lost
    mind = api.create_mind(user="resent")
    lost = LostAnswer()
    with (
        dynamodb_hook("needs-retry.dynamodb.TransactWriteItems", lost.needs_retry),
        dynamodb_hook("before-send.dynamodb.TransactWriteItems", lost.before_send),
    ):
        # When the write is made: DynamoDB applies it, the answer is lost, botocore sends it again
        answer = api.call("POST", path.format(mind=mind.id), json_body=body, **as_user(mind))
    # Then the same request (same ClientRequestToken) went twice, and the client got its 2xx
    assert len(lost.sent) == 2 and lost.sent[0] == lost.sent[1] and "ClientRequestToken" in lost.sent[0]
    assert answer.status == 201, answer.text
    # And there is one write, not two
    found = api.call("GET", listing.format(mind=mind.id), **as_user(mind)).json()
    items = next(v for k, v in found.items() if k != "next_cursor")
    assert len(items) == expected
