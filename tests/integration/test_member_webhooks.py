"""Removal and demotion end the outbound webhooks an owner made (issue 32 item 2): a webhook sends the
mind's events (its memories' content) to the URL its creator chose, so it is revoked with its
creator's tenure (audited with the reason), and the producer and delivery send nothing for one whose
creator no longer holds it, revoked or not. A remaining owner's webhook, and one from before creators
were recorded, keep delivering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.storage import tables
from synapse.teams import counts, holdings

from tests.integration.test_member_credentials import HOW, Shared, audit, ends_role, shared
from tests.integration.test_webhooks import Outbox, subscribe
from tests.integration.test_webhooks import outbox as outbox
from tests.support.api import Api
from tests.support.checks import ok
from tests.support.receiver import Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.settings import configure_fixture as configure_fixture


def contents(receiver: Receiver, path: str) -> list[str]:
    """The content of each memory.created event the receiver got at `path`."""
    bodies = [json.loads(got.body) for got in receiver.got(path)]
    return sorted(b["data"]["memory"]["content"] for b in bodies if b["type"] == "memory.created")


def store(api: Api, team: Shared, content: str) -> None:
    assert api.store(team.mind, as_agent=True, key=content, content=content).status == 201


@pytest.fixture
def unrevoked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A removal or demotion that revokes nothing (as a sweep cut short would leave it)."""
    monkeypatch.setattr(holdings, "ending", lambda *_, **__: holdings.Ending([], counts.Delta()))
    monkeypatch.setattr(holdings, "sweep", lambda *_, **__: 0)


@pytest.mark.parametrize("how", HOW)
def test_a_webhook_of_a_removed_or_demoted_owner_is_revoked(
    api: Api, outbox: Outbox, receiver: Receiver, dynamo: Any, how: str
) -> None:
    # Given alice and the creator, both owners, each subscribe a webhook to the mind's events
    team = shared(api)
    alices, _ = subscribe(api, team.second, receiver.url("/alice"))
    subscribe(api, team.mind, receiver.url("/creator"))
    store(api, team, "before")
    outbox.drain()
    assert contents(receiver, "/alice") == contents(receiver, "/creator") == ["before"]
    # When alice is removed or demoted, and the mind gets a new memory
    ends_role(api, team, how)
    store(api, team, "after")
    outbox.drain()
    # Then her webhook is gone, audited with the reason, and got nothing more
    assert contents(receiver, "/alice") == ["before"]
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/webhooks", token=team.mind.jwt))["webhooks"]
    assert [webhook["url"] for webhook in listed] == [receiver.url("/creator")]
    [revoked] = audit(api, team, "webhook.deleted")
    assert revoked == {
        "webhook_id": alices,
        "url": receiver.url("/alice"),
        "created_by": "alice",
        "reason": f"member_{how}",
    }
    # And the creator's webhook keeps delivering, and the mind's count lets them make as many again
    assert contents(receiver, "/creator") == ["after", "before"]
    mind = dynamo.get_item(TableName=tables.minds_table(), Key=tables.dump(tables.mind_key(team.mind.id)))
    assert mind["Item"]["webhook_count"] == {"N": "1"}


@pytest.mark.parametrize("how", HOW)
@pytest.mark.usefixtures("unrevoked")
def test_an_unrevoked_webhook_sends_nothing_once_its_creator_lost_the_role(
    api: Api, outbox: Outbox, receiver: Receiver, how: str
) -> None:
    # Given alice's webhook, and an event for it already queued
    team = shared(api)
    subscribe(api, team.second, receiver.url("/alice"))
    subscribe(api, team.mind, receiver.url("/creator"))
    store(api, team, "queued")
    outbox.pump()
    # When alice is removed or demoted and nothing of hers is revoked, and the mind gets a new memory
    ends_role(api, team, how)
    store(api, team, "after")
    outbox.drain()
    # Then her webhook is still there, but neither the queued event nor the new one reached her URL
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/webhooks", token=team.mind.jwt))["webhooks"]
    assert len(listed) == 2
    assert receiver.got("/alice") == []
    assert contents(receiver, "/creator") == ["after", "queued"]


@pytest.mark.usefixtures("unrevoked")
def test_a_deleted_minds_purge_reaches_only_the_webhooks_whose_creators_held_them(
    api: Api, outbox: Outbox, receiver: Receiver
) -> None:
    # Given alice's unrevoked webhook outlives her removal
    team = shared(api)
    subscribe(api, team.second, receiver.url("/alice"))
    subscribe(api, team.mind, receiver.url("/creator"), ["memory.deleted"])
    store(api, team, "kept")
    ends_role(api, team, "removed")
    # When the creator deletes the mind (its members go with it)
    assert api.call("DELETE", f"/minds/{team.mind.id}", token=team.mind.jwt).status == 204
    outbox.drain()
    # Then the purge's memory.deleted reached the creator's webhook only
    assert [json.loads(got.body)["type"] for got in receiver.got("/creator")] == ["memory.deleted"]
    assert receiver.got("/alice") == []


def test_a_webhook_from_before_creators_were_recorded_belongs_to_the_mind(
    api: Api, outbox: Outbox, receiver: Receiver, dynamo: Any
) -> None:
    # Given a webhook alice made before webhooks recorded their creator
    team = shared(api)
    webhook_id, _ = subscribe(api, team.second, receiver.url("/old"))
    dynamo.update_item(
        TableName=tables.minds_table(),
        Key=tables.dump(tables.webhook_key(team.mind.id, webhook_id)),
        UpdateExpression="REMOVE created_by, tenure",
    )
    # When alice is removed, Then it stays and keeps delivering
    ends_role(api, team, "removed")
    store(api, team, "after")
    outbox.drain()
    assert contents(receiver, "/old") == ["after"]
    assert audit(api, team, "webhook.deleted") == []
