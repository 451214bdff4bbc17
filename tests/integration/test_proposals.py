"""Proposals (issue 12 part 2): an agent's change to the content or tags of a verified memory waits
for a person's review instead of overwriting what the person vouched for."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from synapse.memory import event_names, events, proposals
from synapse.storage import tables
from synapse.webhooks import signing

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.tables import MEMORIES, scan

PENDING_LINE = "  (change proposed by an agent, pending review)"


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


@pytest.fixture
def verified(api: Api, mind: MindHandle) -> dict[str, Any]:
    """A memory the person stored (so verified by them)."""
    return ok(api.store(mind, content="Lives in Berlin", tags=["home"]), 201)


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> dict[str, Any]:
    return ok(api.call("GET", path, query=query, **as_user(mind)))


def decide(api: Api, mind: MindHandle, proposal_id: str, decision: str, **credential: Any) -> HttpResponse:
    return api.call("POST", f"/proposals/{proposal_id}/{decision}", **(credential or as_user(mind)))


def rewrite(api: Api, mind: MindHandle, content: str = "Lives in Hamburg") -> dict[str, Any]:
    """An agent stores the same (category, key) again with other content: a proposal."""
    return ok(api.store(mind, as_agent=True, content=content, tags=["home", "moved"]), 202)


def recall(api: Api, mind: MindHandle) -> str:
    answer = api.call("GET", "/memory/recall", **as_agent(mind))
    assert answer.status == 200, answer.text
    return answer.text


# ---------------------------------------------------------------- proposing


def test_an_agents_rewrite_of_a_verified_memory_is_a_pending_proposal(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # When an agent stores the same (category, key) with other content and tags
    answer = rewrite(api, mind)
    # Then the answer is 202 with the proposal and the memory as it stays
    proposal, memory = answer["proposal"], answer["memory"]
    assert proposal["id"].startswith("prop_") and proposal["status"] == "pending"
    assert (proposal["memory_id"], proposal["category"], proposal["key"], proposal["action"]) == (
        verified["id"],
        "fact",
        "home_city",
        "update",
    )
    assert proposal["proposed"] == {
        "content": "Lives in Hamburg",
        "tags": ["home", "moved"],
        "priority": "normal",
        "confidence": 0.7,
        "expires_at": None,
        "occurred_at": None,
    }
    assert proposal["base_version"] == 1 and proposal["proposed_by"] == {
        "source": "agent",
        "key_id": mind.key_id,
    }
    assert (proposal["decided_by"], proposal["decided_at"]) == (None, None)
    # And the memory is unchanged and still verified, only marked
    stored = get(api, mind, f"/memory/{verified['id']}")
    assert stored == memory == {**verified, "pending_proposal": proposal["id"]}
    # And the proposal is listed and readable with either credential
    assert get(api, mind, "/proposals", status="pending")["proposals"] == [proposal]
    assert ok(api.call("GET", f"/proposals/{proposal['id']}", **as_agent(mind))) == proposal
    # And recall shows the pending line right after the memory's tags, and nothing else changes
    text = recall(api, mind)
    assert "  Tags: home\n" + PENDING_LINE + "\n" in text
    assert "Lives in Hamburg" not in text


def test_an_agents_put_of_a_verified_memory_is_a_proposal_too(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    path = f"/memory/{verified['id']}"
    answer = ok(api.call("PUT", path, json_body={"content": "Lives in Paris"}, **as_agent(mind)), 202)
    assert answer["proposal"]["proposed"]["content"] == "Lives in Paris"
    assert answer["proposal"]["proposed"]["tags"] == ["home"]
    assert get(api, mind, path)["content"] == "Lives in Berlin"


def test_an_agents_raise_of_a_verified_memorys_priority_or_expiry_applies_directly(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # (lowering them, or adding an expiry, is a proposal: tests/integration/test_demotions.py)
    path = f"/memory/{verified['id']}"
    changed = ok(api.call("PUT", path, json_body={"priority": "high"}, **as_agent(mind)))
    assert (changed["priority"], changed["verified"], changed["version"]) == ("high", True, 2)
    ok(api.call("PUT", path, json_body={"expires_at": "2098-01-01T00:00:00Z"}, **as_user(mind)))
    body = {"expires_at": "2099-01-01T00:00:00Z"}
    changed = ok(api.call("PUT", path, json_body=body, **as_agent(mind)))
    assert (changed["expires_at"], changed["verified"]) == ("2099-01-01T00:00:00.000Z", True)
    assert changed["pending_proposal"] is None
    assert get(api, mind, "/proposals")["proposals"] == []


def test_a_persons_write_and_an_agents_write_to_an_unverified_memory_apply_directly(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    ok(api.store(mind, content="Lives in Bonn"))
    agents = ok(api.store(mind, as_agent=True, key="other", content="x"), 201)
    again = ok(api.store(mind, as_agent=True, key="other", content="y"))
    assert (again["id"], again["content"], again["verified"]) == (agents["id"], "y", False)
    assert get(api, mind, "/proposals")["proposals"] == []


def test_a_second_rewrite_supersedes_the_pending_proposal(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # Given a pending proposal
    first = rewrite(api, mind)["proposal"]
    # When the agent rewrites the memory again
    second = rewrite(api, mind, "Lives in Munich")["proposal"]
    # Then the first is superseded, the second pending, and the memory marked with the second
    assert ok(api.call("GET", f"/proposals/{first['id']}", **as_user(mind)))["status"] == "superseded"
    assert get(api, mind, "/proposals", status="pending")["proposals"] == [second]
    assert [p["id"] for p in get(api, mind, "/proposals")["proposals"]] == [second["id"], first["id"]]
    memory = get(api, mind, f"/memory/{verified['id']}")
    assert (memory["pending_proposal"], memory["content"], memory["version"]) == (
        second["id"],
        "Lives in Berlin",
        1,
    )
    # And the superseded one can no longer be accepted
    assert "superseded" in assert_error(decide(api, mind, first["id"], "accept"), 409)["message"]


def test_a_hook_or_batch_rewrite_of_a_verified_memory_reports_proposed(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # When a batch rewrites the verified memory and stores a new one
    body = {"memories": [memory_body(content="Lives in Hamburg"), memory_body(key="new_one")]}
    answer = ok(api.call("POST", "/memory/batch", json_body=body, **as_agent(mind)))
    # Then the first item is proposed, with the memory as it stays and the proposal
    first = answer["results"][0]
    assert first["status"] == "proposed" and first["memory"]["version"] == 1
    assert first["proposal"]["proposed"]["content"] == "Lives in Hamburg"
    assert answer["summary"] == {"created": 1, "replaced": 0, "proposed": 1, "failed": 0}
    # And a hook delivery does the same, its proposal naming the hook
    hook = ok(api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}), 201)
    payload = json.dumps(memory_body(content="Lives in Cologne")).encode()
    signature = signing.header_value([hook["secret"]], payload, int(time.time()))
    headers = {"content-type": "application/json", signing.HEADER: signature}
    delivered = ok(api.call("POST", f"/hooks/{hook['id']}", raw_body=payload, headers=headers))
    assert delivered["results"][0]["status"] == "proposed"
    assert delivered["results"][0]["proposal"]["proposed_by"] == {"source": "agent", "hook_id": hook["id"]}
    assert delivered["summary"]["proposed"] == 1


def test_unverify_setting_restores_todays_rule(api: Api, mind: MindHandle, verified: dict[str, Any]) -> None:
    # Given a mind whose agents' writes to verified memories apply (and leave them unverified)
    settings = {"agent_writes_to_verified": "unverify"}
    assert (
        ok(api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=settings))["settings"][
            "agent_writes_to_verified"
        ]
        == "unverify"
    )
    # When an agent rewrites the verified memory
    memory = ok(api.store(mind, as_agent=True, content="Lives in Hamburg"))
    # Then it is applied and unverified, with no proposal
    assert (memory["content"], memory["verified"], memory["version"]) == ("Lives in Hamburg", False, 2)
    assert memory["pending_proposal"] is None
    assert get(api, mind, "/proposals")["proposals"] == []


# ---------------------------------------------------------------- deciding


def test_accepting_applies_the_proposal_as_a_new_verified_version(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # Given a pending proposal
    proposal = rewrite(api, mind)["proposal"]
    # When the person accepts it
    answer = ok(decide(api, mind, proposal["id"], "accept"))
    # Then the memory has the proposed text and tags as a new version, verified by the acceptor
    memory = answer["memory"]
    assert (memory["content"], memory["tags"], memory["version"]) == (
        "Lives in Hamburg",
        ["home", "moved"],
        2,
    )
    assert (memory["verified"], memory["verified_by"], memory["pending_proposal"]) == (True, "user-1", None)
    assert get(api, mind, f"/memory/{verified['id']}") == memory
    # And the proposal is accepted, decided by the person
    decided = answer["proposal"]
    assert decided["status"] == "accepted" and decided["decided_by"] == {
        "source": "user",
        "user_id": "user-1",
    }
    assert ok(api.call("GET", f"/proposals/{proposal['id']}", **as_user(mind))) == decided
    # And the history records the acceptance; recall shows the new text without the pending line
    latest = get(api, mind, f"/memory/{verified['id']}/history")["revisions"][0]
    assert (latest["version"], latest["change"]) == (2, "proposal_accepted")
    text = recall(api, mind)
    assert "Lives in Hamburg" in text and PENDING_LINE not in text


def test_accepting_after_a_concurrent_change_is_a_409(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # Given a pending proposal, then the person changes the memory meanwhile
    proposal = rewrite(api, mind)["proposal"]
    path = f"/memory/{verified['id']}"
    ok(api.call("PUT", path, json_body={"content": "Lives in Potsdam"}, **as_user(mind)))
    # When the person accepts the proposal
    answer = decide(api, mind, proposal["id"], "accept")
    # Then it is a 409 asking to look again, and nothing changed
    assert "look at it again" in assert_error(answer, 409)["message"]
    assert get(api, mind, path)["content"] == "Lives in Potsdam"
    assert ok(api.call("GET", f"/proposals/{proposal['id']}", **as_user(mind)))["status"] == "pending"


def test_rejecting_leaves_the_memory_as_it_was(api: Api, mind: MindHandle, verified: dict[str, Any]) -> None:
    # Given a pending proposal
    proposal = rewrite(api, mind)["proposal"]
    # When the person rejects it
    answer = ok(decide(api, mind, proposal["id"], "reject"))
    # Then the memory is as the person verified it, without the mark
    assert answer["proposal"]["status"] == "rejected"
    assert get(api, mind, f"/memory/{verified['id']}") == answer["memory"] == verified
    assert PENDING_LINE not in recall(api, mind)
    # And it can be decided only once
    assert_error(decide(api, mind, proposal["id"], "accept"), 409)
    assert get(api, mind, "/proposals", status="rejected")["proposals"] == [answer["proposal"]]


def test_a_persons_change_keeps_the_proposal_pending_and_deleting_the_memory_supersedes_it(
    api: Api, mind: MindHandle, verified: dict[str, Any]
) -> None:
    # Given a pending proposal
    proposal = rewrite(api, mind)["proposal"]
    # When the person stores the memory again themselves
    changed = ok(api.store(mind, content="Lives in Leipzig", tags=["home"]))
    # Then their change applies and the proposal still waits, marked on the memory
    assert (changed["content"], changed["pending_proposal"]) == ("Lives in Leipzig", proposal["id"])
    assert PENDING_LINE in recall(api, mind)
    # When the memory is deleted
    assert api.call("DELETE", f"/memory/{verified['id']}", **as_user(mind)).status == 204
    # Then the proposal is superseded with it, by whoever deleted it
    closed = ok(api.call("GET", f"/proposals/{proposal['id']}", **as_user(mind)))
    assert closed["status"] == "superseded" and closed["decided_by"] == {
        "source": "user",
        "user_id": "user-1",
    }
    assert get(api, mind, "/proposals", status="pending")["proposals"] == []


@pytest.mark.parametrize("decision", ["accept", "reject"])
def test_a_mind_key_cannot_decide_a_proposal(
    api: Api, mind: MindHandle, verified: dict[str, Any], decision: str
) -> None:
    proposal = rewrite(api, mind)["proposal"]
    assert_error(decide(api, mind, proposal["id"], decision, **as_agent(mind)), 403)
    assert ok(api.call("GET", f"/proposals/{proposal['id']}", **as_agent(mind)))["status"] == "pending"


def test_an_unknown_proposal_is_a_404(api: Api, mind: MindHandle) -> None:
    assert_error(api.call("GET", "/proposals/prop_nothing", **as_user(mind)), 404)
    assert_error(decide(api, mind, "not-a-proposal", "accept"), 404)


def test_proposals_filter_by_memory_and_category_and_page_newest_first(api: Api, mind: MindHandle) -> None:
    # Given proposals for two memories in two categories
    for key, category in [("a", "fact"), ("b", "preference")]:
        ok(api.store(mind, key=key, category=category), 201)
    made = []
    for n in range(3):
        for key, category in [("a", "fact"), ("b", "preference")]:
            made.append(ok(api.store(mind, as_agent=True, key=key, category=category, content=f"v{n}"), 202))
    # Then the filters select, newest first
    ids = [m["proposal"]["id"] for m in reversed(made)]
    assert [p["id"] for p in get(api, mind, "/proposals")["proposals"]] == ids
    facts = get(api, mind, "/proposals", category="fact")["proposals"]
    assert [p["key"] for p in facts] == ["a"] * 3
    memory_id = made[1]["memory"]["id"]
    assert {p["memory_id"] for p in get(api, mind, "/proposals", memory_id=memory_id)["proposals"]} == {
        memory_id
    }
    assert len(get(api, mind, "/proposals", status="pending")["proposals"]) == 2
    # And pages follow the cursor
    first = get(api, mind, "/proposals", limit=4)
    rest = get(api, mind, "/proposals", cursor=first["next_cursor"])
    assert [p["id"] for p in first["proposals"] + rest["proposals"]] == ids and rest["next_cursor"] is None
    assert_error(api.call("GET", "/proposals", query={"status": "maybe"}, **as_user(mind)), 400)


# ---------------------------------------------------------------- webhook events


def _proposal_item(dynamo: Any, mind: MindHandle, proposal_id: str) -> dict[str, Any]:
    sk = proposals.PROPOSAL_PREFIX + proposal_id
    return next(i for i in scan(dynamo, MEMORIES) if i["pk"] == mind.id and i["sk"] == sk)


def _record(name: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "Keys": tables.dump({"pk": new["pk"], "sk": new["sk"]}),
        "NewImage": tables.dump(new),
    }
    if old is not None:
        body["OldImage"] = tables.dump(old)
    return {"eventName": name, "eventID": f"{name}-{new['status']}", "dynamodb": body}


@pytest.mark.parametrize("decision", ["accept", "reject"])
def test_proposal_items_become_proposal_events(
    api: Api, mind: MindHandle, verified: dict[str, Any], dynamo: Any, decision: str
) -> None:
    # Given a proposal as the stream sees it made, then decided
    proposal = rewrite(api, mind)["proposal"]
    made = _proposal_item(dynamo, mind, proposal["id"])
    ok(decide(api, mind, proposal["id"], decision))
    decided = _proposal_item(dynamo, mind, proposal["id"])
    # Then its INSERT is proposal.created and its decision proposal.accepted / rejected
    (created,) = events.from_stream_record(_record("INSERT", made))
    assert created.type == "proposal.created" and created.mind_id == mind.id
    assert (
        created.data["proposal"] == proposal and created.data["memory"]["pending_proposal"] == proposal["id"]
    )
    (done,) = events.from_stream_record(_record("MODIFY", decided, made))
    assert done.type == f"proposal.{decision}ed" and done.data["proposal"]["status"] == f"{decision}ed"
    assert {"proposal.created", "proposal.accepted", "proposal.rejected"} <= set(event_names.SUBSCRIBABLE)
