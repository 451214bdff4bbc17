"""README's walk-through over real HTTP: the printed JWT, a Mind Key, and every memory operation."""

from __future__ import annotations

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import RunningService


def test_readme_walkthrough(http: Http, runner: RunningService) -> None:
    # Given a mind created with the JWT the runner printed
    created_mind = http.call("POST", "/minds", token=runner.jwt, json_body={"name": "My Mind"})
    assert created_mind.status_code == 201, created_mind.text
    mind_id = created_mind.json()["mind"]["id"]
    key = created_mind.json()["mind_key"]["key"]
    assert key.startswith("mk_")
    as_user = {"X-Mind-Id": mind_id}

    # When an agent stores a memory with the Mind Key
    stored = http.call("POST", "/memory", token=key, json_body=memory_body(content="Lives in Berlin"))
    # Then it is created, with a Location and the agent's defaults
    assert stored.status_code == 201, stored.text
    memory = stored.json()
    assert stored.headers["Location"] == f"/memory/{memory['id']}"
    assert (memory["source"], memory["verified"], memory["version"]) == ("agent", False, 1)

    # When the same (category, key) is stored again
    replaced = http.call("POST", "/memory", token=key, json_body=memory_body(content="Lives in Hamburg"))
    # Then the memory is replaced in place
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["id"], replaced.json()["version"]) == (memory["id"], 2)

    # When it is read by id
    read = http.call("GET", f"/memory/{memory['id']}", token=key)
    assert read.status_code == 200, read.text
    assert read.json()["content"] == "Lives in Hamburg"

    # When it is updated with PUT and the current version in If-Match
    updated = http.call(
        "PUT",
        f"/memory/{memory['id']}",
        token=key,
        json_body={"content": "Lives in Munich", "tags": ["Home"]},
        headers={"If-Match": "2"},
    )
    assert updated.status_code == 200, updated.text
    assert (updated.json()["version"], updated.json()["tags"]) == (3, ["home"])
    # And a writer holding the old version is refused
    stale = http.call(
        "PUT", f"/memory/{memory['id']}", token=key, json_body={"content": "x"}, headers={"If-Match": "2"}
    )
    assert stale.status_code == 412, stale.text
    assert stale.json()["error"]["code"]

    # When the agent tries to verify it, it may not; the person may
    by_agent = http.call("POST", f"/memory/{memory['id']}/verify", token=key)
    assert by_agent.status_code == 403, by_agent.text
    by_person = http.call("POST", f"/memory/{memory['id']}/verify", token=runner.jwt, headers=as_user)
    assert by_person.status_code == 200, by_person.text
    assert by_person.json()["verified"] is True
    assert by_person.json()["content"] == "Lives in Munich"

    # When it is deleted, it is gone
    deleted = http.call("DELETE", f"/memory/{memory['id']}", token=runner.jwt, headers=as_user)
    assert deleted.status_code == 204, deleted.text
    assert deleted.content == b""
    gone = http.call("GET", f"/memory/{memory['id']}", token=key)
    assert gone.status_code == 404, gone.text
    assert gone.json()["error"]["code"]
