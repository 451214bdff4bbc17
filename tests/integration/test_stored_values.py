"""Reads hold up whatever a mind's items hold (issue 32 item 4): a setting or a proposal no write
would store (left by a restore from before restores were checked, or written by hand) is read
with its default, or refused by state, never answered with a 500."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.storage import tables

from tests.support import teams
from tests.support.api import Api, MindHandle
from tests.support.checks import as_user, assert_error, ok
from tests.support.tables import MEMORIES, MINDS

BAD_SETTINGS = {
    "history_retention_days": "ninety",
    "agent_writes_to_verified": 7,
    "agent_writes_critical": "sometimes",
}


def _set(dynamo: Any, table: str, key: dict[str, str], **fields: Any) -> None:
    """Write `fields` straight into an item, as no endpoint would."""
    dynamo.update_item(
        TableName=table,
        Key=tables.dump(key),
        UpdateExpression="SET " + ", ".join(f"#{name} = :{name}" for name in fields),
        ExpressionAttributeNames={f"#{name}": name for name in fields},
        ExpressionAttributeValues=tables.values(**fields),
    )


@pytest.mark.parametrize("setting", sorted(BAD_SETTINGS))
def test_a_mind_with_a_stored_setting_no_write_allows_is_read_with_the_default(
    api: Api, dynamo: Any, setting: str
) -> None:
    # Given a mind with a memory, and a member who joined it, whose stored setting is none PATCH
    # /minds would write
    mind = api.create_mind()
    ok(api.store(mind, key="home_city"), 201)
    viewer = teams.join(api, mind, "viewer-1", "viewer")
    _set(dynamo, MINDS, tables.mind_key(mind.id), **{setting: BAD_SETTINGS[setting]})
    # When its members read it, list and recall its memories, and change it
    shown = ok(api.call("GET", f"/minds/{mind.id}", token=mind.jwt))
    listed = ok(api.call("GET", "/minds", token=viewer))["minds"]
    ok(api.call("GET", "/memory", **as_user(mind)))
    assert api.call("GET", "/memory/recall", **as_user(mind)).status == 200
    renamed = ok(api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "Renamed"}))
    # Then each read shows the setting's default
    default = {"history_retention_days": 90, "agent_writes_to_verified": "propose"}
    default["agent_writes_critical"] = "allow"
    assert shown["settings"][setting] == default[setting]
    assert [m["settings"][setting] for m in listed] == [default[setting]]
    assert renamed["name"] == "Renamed"
    # And an agent's write, which reads the settings, is served
    assert api.store(mind, as_agent=True, key="home_city", content="Lives in Oslo").status < 300
    # And the mind can be deleted
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204


def _proposal(api: Api, mind: MindHandle) -> str:
    """A pending proposal: an agent's change to a memory its owner verified."""
    memory = ok(api.store(mind, key="home_city", content="Lives in Berlin"), 201)
    ok(api.call("POST", f"/memory/{memory['id']}/verify", **as_user(mind)))
    proposed = api.store(mind, as_agent=True, key="home_city", content="Lives in Hamburg")
    assert proposed.status == 202, proposed.text
    return str(proposed.json()["proposal"]["id"])


BAD_PROPOSALS: dict[str, dict[str, Any]] = {
    "base_version": {"base_version": "abc"},
    "priority": {"proposed": {"content": "x", "tags": [], "priority": "urgent", "confidence": 1}},
    "confidence": {"proposed": {"content": "x", "tags": [], "priority": "low", "confidence": "high"}},
    "proposed": {"proposed": "everything"},
}


@pytest.mark.parametrize("name", sorted(BAD_PROPOSALS))
def test_a_stored_proposal_no_write_makes_is_listed_and_refused_by_state(
    api: Api, dynamo: Any, name: str
) -> None:
    # Given a pending proposal whose stored fields are none its write makes
    mind = api.create_mind()
    proposal_id = _proposal(api, mind)
    _set(dynamo, MEMORIES, {"pk": mind.id, "sk": f"PROP#{proposal_id}"}, **BAD_PROPOSALS[name])
    # When its mind's members list the proposals and read it
    listed = ok(api.call("GET", "/proposals", **as_user(mind)))["proposals"]
    one = ok(api.call("GET", f"/proposals/{proposal_id}", **as_user(mind)))
    # Then both answer, the proposal shown
    assert [p["id"] for p in listed] == [proposal_id] and one["id"] == proposal_id
    # And accepting it is refused as a proposal that cannot apply (409), rejecting it is served
    error = assert_error(api.call("POST", f"/proposals/{proposal_id}/accept", **as_user(mind)), 409)
    assert "reject" in error["message"]
    ok(api.call("POST", f"/proposals/{proposal_id}/reject", **as_user(mind)))
    # And the mind reads on: its memories, recall, and its backup
    ok(api.call("GET", "/memory", **as_user(mind)))
    assert api.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt).status == 200
