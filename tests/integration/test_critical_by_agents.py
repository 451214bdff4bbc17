"""Whether an agent may put a memory at critical priority (issue 21 item 3): the mind's
`agent_writes_critical` — `allow` (the default: as before), `propose` (stored at high, critical
proposed for a person to accept) or `deny` (403). Critical memories sit at the top of every recall,
and an agent's are unverified."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_demotions import deliver, get, recall
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def setting(api: Api, mind: MindHandle, value: str) -> None:
    body = {"agent_writes_critical": value}
    settings = ok(api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=body))["settings"]
    assert settings["agent_writes_critical"] == value


def critical(**fields: Any) -> dict[str, Any]:
    return memory_body(
        **{"key": "deadline", "content": "Tax return due Friday", "priority": "critical", **fields}
    )


# ---------------------------------------------------------------- allow (the default)


def test_by_default_an_agent_writes_critical_as_before(api: Api, mind: MindHandle) -> None:
    # When an agent stores a critical memory and raises another to critical
    created = ok(api.call("POST", "/memory", json_body=critical(), **as_agent(mind)), 201)
    other = ok(api.store(mind, as_agent=True, key="other", content="Flight at 9"), 201)
    body = {"priority": "critical"}
    raised = ok(api.call("PUT", f"/memory/{other['id']}", json_body=body, **as_agent(mind)))
    # Then both are critical, unverified, at the top of recall, with no proposal
    assert (created["priority"], created["verified"]) == ("critical", False)
    assert (raised["priority"], raised["verified"]) == ("critical", False)
    assert recall(api, mind).count("(CRITICAL) [unverified]") == 2
    assert get(api, mind, "/proposals")["proposals"] == []


# ---------------------------------------------------------------- deny


def test_deny_refuses_an_agents_critical_on_every_path_and_stores_nothing(api: Api, mind: MindHandle) -> None:
    # Given a mind that does not let agents write critical, and an agent's memory at normal
    setting(api, mind, "deny")
    other = ok(api.store(mind, as_agent=True, key="other", content="Flight at 9"), 201)
    # When an agent stores a critical memory, raises one to critical, and sends one in a batch and a hook
    stored = api.call("POST", "/memory", json_body=critical(), **as_agent(mind))
    raised = api.call("PUT", f"/memory/{other['id']}", json_body={"priority": "critical"}, **as_agent(mind))
    batch = ok(api.call("POST", "/memory/batch", json_body={"memories": [critical()]}, **as_agent(mind)))
    hooked = deliver(api, mind, critical())
    # Then each is a 403 naming the priority and the setting, and nothing changed
    for answer in (stored, raised):
        error = assert_error(answer, 403, field="priority", rule="agent_writes_critical")
        assert "agent_writes_critical" in error["message"]
    for items in (batch, hooked):
        (result,) = items["results"]
        assert result["status"] == "error" and result["error"]["code"] == "forbidden"
        assert items["summary"]["failed"] == 1
    assert [m["key"] for m in get(api, mind, "/memory")["memories"]] == ["other"]
    assert get(api, mind, f"/memory/{other['id']}")["priority"] == "normal"


def test_deny_leaves_a_person_free_and_an_agent_may_keep_what_is_already_critical(
    api: Api, mind: MindHandle
) -> None:
    # Given an agent's critical memory from before the mind said deny
    earlier = ok(api.call("POST", "/memory", json_body=critical(), **as_agent(mind)), 201)
    setting(api, mind, "deny")
    # When the agent changes its content, leaving the priority as it is
    body = {"content": "Tax return due Monday"}
    changed = ok(api.call("PUT", f"/memory/{earlier['id']}", json_body=body, **as_agent(mind)))
    # And a person stores a critical memory of their own
    persons = ok(api.store(mind, **critical(key="passport")), 201)
    # Then both apply: the setting governs only an agent that makes a memory critical
    assert (changed["content"], changed["priority"]) == ("Tax return due Monday", "critical")
    assert (persons["priority"], persons["verified"]) == ("critical", True)


# ---------------------------------------------------------------- propose


def test_propose_stores_an_agents_new_critical_memory_at_high_and_proposes_critical(
    api: Api, mind: MindHandle
) -> None:
    # Given a mind whose agents' critical waits for a person
    setting(api, mind, "propose")
    # When an agent stores a critical memory
    answer = ok(api.call("POST", "/memory", json_body=critical(), **as_agent(mind)), 202)
    # Then it is created at high, unverified, marked with a proposal of critical
    memory, proposal = answer["memory"], answer["proposal"]
    assert (memory["priority"], memory["verified"], memory["version"]) == ("high", False, 1)
    assert memory["pending_proposal"] == proposal["id"]
    assert (proposal["action"], proposal["base_version"], proposal["memory_id"]) == (
        "update",
        1,
        memory["id"],
    )
    assert proposal["proposed"]["priority"] == "critical"
    assert get(api, mind, f"/memory/{memory['id']}") == memory
    assert "deadline" in recall(api, mind) and "(CRITICAL)" not in recall(api, mind)
    assert get(api, mind, f"/memory/{memory['id']}/history")["revisions"][0]["change"] == "created"
    # When the person accepts it
    accepted = ok(api.call("POST", f"/proposals/{proposal['id']}/accept", **as_user(mind)))
    # Then the memory is critical and verified by them
    after = accepted["memory"]
    assert (after["priority"], after["verified"], after["verified_by"], after["version"]) == (
        "critical",
        True,
        "user-1",
        2,
    )
    assert "identity" not in recall(api, mind) and "fact (CRITICAL) [verified]" in recall(api, mind)


def test_propose_applies_an_agents_raise_at_high_and_proposes_critical(api: Api, mind: MindHandle) -> None:
    # Given an agent's memory at normal, in a mind set to propose
    setting(api, mind, "propose")
    other = ok(api.store(mind, as_agent=True, key="other", content="Flight at 9"), 201)
    # When the agent raises it to critical, with new content
    body = {"priority": "critical", "content": "Flight at 8"}
    answer = ok(api.call("PUT", f"/memory/{other['id']}", json_body=body, **as_agent(mind)), 202)
    # Then the change applies at high as a new version, and critical waits on that version
    memory, proposal = answer["memory"], answer["proposal"]
    assert (memory["content"], memory["priority"], memory["version"]) == ("Flight at 8", "high", 2)
    assert (proposal["base_version"], proposal["proposed"]["priority"]) == (2, "critical")
    assert get(api, mind, f"/memory/{other['id']}") == memory
    # And rejecting keeps it at high
    rejected = ok(api.call("POST", f"/proposals/{proposal['id']}/reject", **as_user(mind)))
    assert (rejected["memory"]["priority"], rejected["memory"]["pending_proposal"]) == ("high", None)


def test_propose_reports_proposed_in_a_batch_and_a_hook(api: Api, mind: MindHandle) -> None:
    setting(api, mind, "propose")
    batch = ok(api.call("POST", "/memory/batch", json_body={"memories": [critical()]}, **as_agent(mind)))
    hooked = deliver(api, mind, critical(key="other"))
    for answer in (batch, hooked):
        (result,) = answer["results"]
        assert result["status"] == "proposed"
        assert get(api, mind, f"/memory/{result['memory']['id']}")["priority"] == "high"
        assert result["proposal"]["proposed"]["priority"] == "critical"
        assert answer["summary"] == {"created": 0, "replaced": 0, "proposed": 1, "failed": 0}
    assert len(get(api, mind, "/proposals", status="pending")["proposals"]) == 2


def test_propose_on_a_verified_memory_makes_one_proposal_of_the_whole_change(
    api: Api, mind: MindHandle
) -> None:
    # Given a person's memory, in a mind set to propose
    setting(api, mind, "propose")
    verified = ok(api.store(mind, key="deadline", content="Tax return due Friday"), 201)
    # When an agent raises it to critical, alone and then with new content
    raised = api.call(
        "PUT", f"/memory/{verified['id']}", json_body={"priority": "critical"}, **as_agent(mind)
    )
    body = {"priority": "critical", "content": "Tax return due Monday"}
    rewritten = api.call("PUT", f"/memory/{verified['id']}", json_body=body, **as_agent(mind))
    # Then the raise alone applies at high (still verified) with critical proposed, and the rewrite is
    # one proposal of everything, the memory left at high as the person has it
    first = ok(raised, 202)
    assert (first["memory"]["priority"], first["memory"]["verified"]) == ("high", True)
    second = ok(rewritten, 202)
    assert second["proposal"]["proposed"]["content"] == "Tax return due Monday"
    assert second["proposal"]["proposed"]["priority"] == "critical"
    assert get(api, mind, f"/proposals/{first['proposal']['id']}")["status"] == "superseded"
    memory = get(api, mind, f"/memory/{verified['id']}")
    assert (memory["content"], memory["priority"], memory["version"]) == ("Tax return due Friday", "high", 2)


def test_the_setting_is_audited(api: Api, mind: MindHandle) -> None:
    setting(api, mind, "deny")
    events = ok(api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt))["events"]
    (event,) = [e for e in events if e["action"] == "mind.settings_changed"]
    assert event["target"] == {"settings": {"agent_writes_critical": {"from": "allow", "to": "deny"}}}
