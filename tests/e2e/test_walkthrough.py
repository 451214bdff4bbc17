"""README's curl walk-through, step by step, over real HTTP with the JWT the runner printed."""

from __future__ import annotations

from tests.e2e.conftest import Http
from tests.support.runner import RunningService

STYLE = {"category": "preference", "key": "communication_style", "priority": "high"}


def test_readme_walkthrough(http: Http, runner: RunningService) -> None:
    jwt = runner.jwt  # parsed from the runner's `JWT=…` line

    # 1. Create a mind with the JWT: the answer holds its first Mind Key
    created_mind = http.call("POST", "/minds", token=jwt, json_body={"name": "My Mind"})
    assert created_mind.status_code == 201, created_mind.text
    mind_id = created_mind.json()["mind"]["id"]
    mind_key = created_mind.json()["mind_key"]["key"]
    assert mind_key.startswith("mk_")
    as_person = {"X-Mind-Id": mind_id}

    # 2. Store a memory as an agent: 201, Location, tags lowercased, unverified at 0.7
    body = {**STYLE, "content": "Prefers concise answers", "tags": ["Communication", "style"]}
    stored = http.call("POST", "/memory", token=mind_key, json_body=body)
    assert stored.status_code == 201, stored.text
    memory = stored.json()
    assert stored.headers["Location"] == f"/memory/{memory['id']}"
    assert memory["tags"] == ["communication", "style"]
    assert (memory["source"], memory["verified"], memory["confidence"]) == ("agent", False, 0.7)
    assert memory["version"] == 1

    # 3. Store again with the same (category, key), via X-Mind-Key: replaced in place, version 2
    body = {**STYLE, "content": "Prefers concise technical answers with code", "tags": ["communication"]}
    replaced = http.call("POST", "/memory", json_body=body, headers={"X-Mind-Key": mind_key})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["id"] == memory["id"]
    assert replaced.json()["created_at"] == memory["created_at"]
    assert replaced.json()["version"] == 2

    # 4. Read it by id
    read = http.call("GET", f"/memory/{memory['id']}", token=mind_key)
    assert read.status_code == 200, read.text
    assert read.json()["content"] == "Prefers concise technical answers with code"

    # 5. Update with If-Match: the current version wins, the stale one gets 412
    updated = http.call(
        "PUT",
        f"/memory/{memory['id']}",
        token=mind_key,
        json_body={"priority": "critical"},
        headers={"If-Match": "2"},
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["priority"], updated.json()["version"]) == ("critical", 3)
    assert updated.json()["content"] == "Prefers concise technical answers with code"
    stale = http.call(
        "PUT",
        f"/memory/{memory['id']}",
        token=mind_key,
        json_body={"priority": "low"},
        headers={"If-Match": "2"},
    )
    assert stale.status_code == 412, stale.text
    assert stale.json()["error"]["code"] == "precondition_failed"

    # 6. Verify: the Mind Key may not (403), the person may
    by_agent = http.call("POST", f"/memory/{memory['id']}/verify", token=mind_key)
    assert by_agent.status_code == 403, by_agent.text
    by_person = http.call("POST", f"/memory/{memory['id']}/verify", token=jwt, headers=as_person)
    assert by_person.status_code == 200, by_person.text
    assert (by_person.json()["verified"], by_person.json()["verified_by"]) == (True, "local-user")

    # 7. List with filters
    listed = http.call(
        "GET",
        "/memory",
        token=jwt,
        headers=as_person,
        params={"category": "preference", "tag": "communication", "verified": "true", "limit": 10},
    )
    assert listed.status_code == 200, listed.text
    assert [m["id"] for m in listed.json()["memories"]] == [memory["id"]]
    assert listed.json()["next_cursor"] is None

    # 8. Delete it for good as the person (an agent's delete of a verified memory is a proposal)
    proposed = http.call("DELETE", f"/memory/{memory['id']}", token=mind_key)
    assert proposed.status_code == 202 and proposed.json()["proposal"]["action"] == "delete", proposed.text
    deleted = http.call("DELETE", f"/memory/{memory['id']}", token=jwt, headers=as_person)
    assert deleted.status_code == 204, deleted.text
    assert deleted.content == b""
    gone = http.call("GET", f"/memory/{memory['id']}", token=mind_key)
    assert gone.status_code == 404, gone.text
    assert gone.json()["error"]["code"] == "not_found"
