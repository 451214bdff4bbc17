"""A mind's own settings through PATCH /minds/{mind_id} (issue 12): what an agent's write to a verified
memory does, and how long history is kept."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.core.errors import NotFound
from synapse.minds import minds

from tests.support.api import Api, MindHandle
from tests.support.checks import assert_error

DEFAULTS = {
    "agent_writes_to_verified": "propose",
    "history_retention_days": 90,
    "agent_writes_critical": "allow",
}


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind("alice")


def patch(api: Api, mind: MindHandle, body: Any) -> Any:
    return api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=body)


def test_a_new_mind_shows_the_default_settings_everywhere(api: Api, mind: MindHandle) -> None:
    # When the mind is read, listed, and its settings looked up by the layer
    shown = api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()
    listed = api.call("GET", "/minds", token=mind.jwt).json()["minds"][0]
    # Then each shows the defaults
    assert shown["settings"] == listed["settings"] == DEFAULTS
    assert minds.settings_of(mind.id) == minds.MindSettings("propose", 90, "allow")


def test_settings_change_alone_or_with_a_rename_and_what_is_left_out_stays(
    api: Api, mind: MindHandle
) -> None:
    # When one setting is changed
    first = patch(api, mind, {"agent_writes_to_verified": "unverify"})
    # Then only it changes, the name stays, and the answer is the mind
    assert first.status == 200, first.text
    assert first.json()["name"] == "Michael's Mind"
    assert first.json()["settings"] == {**DEFAULTS, "agent_writes_to_verified": "unverify"}
    # When the other is changed together with the name
    second = patch(api, mind, {"name": "  Work  ", "history_retention_days": 3650})
    # Then both change and the first setting stays
    assert second.status == 200, second.text
    assert second.json()["name"] == "Work"
    assert second.json()["settings"] == {
        **DEFAULTS,
        "agent_writes_to_verified": "unverify",
        "history_retention_days": 3650,
    }
    # And a rename alone leaves the settings
    third = patch(api, mind, {"name": "Home"}).json()
    assert third["settings"]["history_retention_days"] == 3650
    # And what readers see is what was set
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json() == third
    assert minds.settings_of(mind.id) == minds.MindSettings("unverify", 3650)
    # And the critical setting changes alone, the others staying
    fourth = patch(api, mind, {"agent_writes_critical": "deny"})
    assert fourth.status == 200, fourth.text
    assert fourth.json()["settings"] == {
        "agent_writes_to_verified": "unverify",
        "history_retention_days": 3650,
        "agent_writes_critical": "deny",
    }
    assert minds.settings_of(mind.id) == minds.MindSettings("unverify", 3650, "deny")


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"agent_writes_to_verified": "ignore"}, "agent_writes_to_verified", "enum"),
        ({"agent_writes_critical": "never"}, "agent_writes_critical", "enum"),
        ({"agent_writes_critical": True}, "agent_writes_critical", "enum"),
        ({"agent_writes_to_verified": None, "history_retention_days": 0}, "history_retention_days", "range"),
        ({"history_retention_days": 3651}, "history_retention_days", "range"),
        ({"history_retention_days": "90"}, "history_retention_days", "type"),
        ({"history_retention_days": 90.5}, "history_retention_days", "type"),
        ({"history_retention_days": True}, "history_retention_days", "type"),
        ({"name": "   "}, "name", "length"),
        ({"colour": "blue"}, "colour", "unknown_field"),
        ({}, "body", "required"),
        ({"name": None}, "body", "required"),
    ],
)
def test_bad_settings_are_a_422_naming_the_field(
    api: Api, mind: MindHandle, body: dict[str, Any], field: str, rule: str
) -> None:
    # When a PATCH carries a bad value, an unknown field, or nothing to change
    answer = patch(api, mind, body)
    # Then it is a 422 naming the field, and nothing changed
    assert_error(answer, 422, field=field, rule=rule)
    assert minds.settings_of(mind.id) == minds.MindSettings()
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["name"] == "Michael's Mind"


def test_only_the_owner_with_a_jwt_changes_settings(api: Api, mind: MindHandle) -> None:
    # Given another user's mind
    stranger = api.create_mind("bob")
    body = {"agent_writes_to_verified": "unverify"}
    # When the mind's own key, or the other user, tries to change the settings
    by_key = api.call("PATCH", f"/minds/{mind.id}", token=mind.key, json_body=body)
    by_stranger = api.call("PATCH", f"/minds/{mind.id}", token=stranger.jwt, json_body=body)
    # Then the key is a 403, the stranger a 404, and nothing changed
    assert_error(by_key, 403)
    assert_error(by_stranger, 404)
    assert minds.settings_of(mind.id) == minds.MindSettings()


def test_settings_of_a_missing_mind_is_not_found(api: Api) -> None:
    for mind_id in ("m_doesnotexist", "not-an-id"):
        with pytest.raises(NotFound):
            minds.settings_of(mind_id)
