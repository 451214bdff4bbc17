"""Facts that replace facts (issue 42 item 1): a write names what it replaces in `supersedes`; the
replaced memories are kept, marked, and leave the reads unless `include_superseded=true`."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.memory import events

from infra.stream_pump import Pump
from tests.integration.test_hooks import create_hook, deliver
from tests.support import backups
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, ok
from tests.support.expiry import mcp_tool
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MEMORIES, scan


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def stored(
    api: Api, mind: MindHandle, *, agent: bool = False, status: int = 201, **fields: Any
) -> dict[str, Any]:
    return ok(api.store(mind, as_agent=agent, **fields), status)


def job_pair(api: Api, mind: MindHandle, *, agent: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """An older job, then the newer one naming it in `supersedes`."""
    old = stored(
        api, mind, agent=agent, key="employer", content="Works at Acme as an engineer", tags=["work"]
    )
    new = stored(
        api, mind, agent=agent, key="new_job", content="Now works at Globex as a manager", tags=["work"],
        supersedes=[old["id"]],
    )  # fmt: skip
    return old, new


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> dict[str, Any]:
    return ok(api.call("GET", path, query=query, **as_user(mind)))


def listed_ids(api: Api, mind: MindHandle, path: str, key: str = "memories", **query: Any) -> list[str]:
    return [m["id"] for m in get(api, mind, path, **query)[key]]


# ---------------------------------------------------------------- REST


def test_a_write_that_names_what_it_replaces_marks_it_and_keeps_it(api: Api, mind: MindHandle) -> None:
    # Given a memory, when a newer one is stored naming it in `supersedes`
    old, new = job_pair(api, mind)
    # Then the answer says what became of it
    assert new["supersedes"] == [{"id": old["id"], "status": "superseded"}]
    # And the old memory is still readable by id, marked, as its next version
    kept = get(api, mind, f"/memory/{old['id']}")
    assert kept["superseded_by"] == new["id"] and kept["superseded_at"] is not None
    assert kept["version"] == 2 and kept["content"] == old["content"]
    # And its history records the replacement
    history = get(api, mind, f"/memory/{old['id']}/history")
    assert [r["change"] for r in history["revisions"]][:1] == ["superseded"]


def test_replaced_memories_leave_list_by_tag_recall_and_expiring_unless_asked(
    api: Api, mind: MindHandle
) -> None:
    # Given an older fact replaced by a newer one, both tagged and expiring
    soon = clock.to_iso(clock.now() + timedelta(days=10))
    old = stored(api, mind, key="car", content="Drives a red Fiat", tags=["car"], expires_at=soon)
    new = stored(
        api, mind, key="car_now", content="Drives a blue Tesla", tags=["car"], expires_at=soon,
        supersedes=[old["id"]],
    )  # fmt: skip
    # Then the list, by-tag and expiring reads show only the newer one by default
    assert listed_ids(api, mind, "/memory") == [new["id"]]
    assert listed_ids(api, mind, "/memory/by-tag", tag="car") == [new["id"]]
    assert listed_ids(api, mind, "/memory/expiring", within="30d") == [new["id"]]
    # And recall leaves the old one out, and does not count it
    recall = api.call("GET", "/memory/recall", **as_agent(mind)).text
    assert "Drives a blue Tesla" in recall and "Fiat" not in recall
    assert "1 total" in recall
    # When a read asks include_superseded=true, the old one comes back, marked
    both = get(api, mind, "/memory", include_superseded="true")["memories"]
    assert {m["id"]: m["superseded_by"] for m in both} == {new["id"]: None, old["id"]: new["id"]}
    assert listed_ids(api, mind, "/memory/by-tag", tag="car", include_superseded="true") == [
        new["id"],
        old["id"],
    ]
    assert set(listed_ids(api, mind, "/memory/expiring", within="30d", include_superseded="true")) == {
        new["id"],
        old["id"],
    }
    tagged = get(api, mind, "/memory/by-tag", tag="car", include_superseded="true", include_expired="true")
    assert [m["id"] for m in tagged["memories"]] == [new["id"], old["id"]]
    # And recall lists it after the rest, saying what replaced it (text and JSON)
    asked = {"include_superseded": "true"}
    full = api.call("GET", "/memory/recall", query=asked, **as_agent(mind)).text
    assert full.index("Drives a blue Tesla") < full.index(
        f"fact/car: Drives a red Fiat (replaced by {new['id']})"
    )
    shown = ok(api.call("GET", "/memory/recall", query={**asked, "format": "json"}, **as_agent(mind)))
    assert [m["id"] for m in shown["replaced"]] == [old["id"]]


def test_a_put_may_name_what_the_memory_replaces(api: Api, mind: MindHandle) -> None:
    # Given two memories written without saying one replaces the other
    old = stored(api, mind, key="phone", content="Phone number is 555-0100")
    new = stored(api, mind, key="phone_new", content="New phone number is 555-0199")
    # When the newer one is updated with `supersedes`
    answer = ok(
        api.call("PUT", f"/memory/{new['id']}", json_body={"supersedes": [old["id"]]}, **as_user(mind))
    )
    # Then the older one is marked replaced by it
    assert answer["supersedes"] == [{"id": old["id"], "status": "superseded"}]
    assert get(api, mind, f"/memory/{old['id']}")["superseded_by"] == new["id"]


@pytest.mark.parametrize(
    ("ids", "rule"),
    [
        (["mem_doesnotexist0000"], "unknown"),
        (["not-an-id"], "format"),
    ],
)
def test_an_unknown_id_is_a_422_naming_the_field_and_stores_nothing(
    api: Api, mind: MindHandle, ids: list[str], rule: str
) -> None:
    # When a write names something that is not one of this mind's memories
    answer = api.store(mind, key="x", content="Something new", supersedes=ids)
    # Then 422 names supersedes[0], and nothing was stored
    assert_error(answer, 422, field="supersedes[0]", rule=rule)
    assert get(api, mind, "/memory")["memories"] == []


def test_another_minds_memory_is_unknown_here(api: Api, mind: MindHandle) -> None:
    # Given a memory of another mind (of another person)
    other = api.create_mind(user="user-2")
    theirs = stored(api, other, content="Their fact")
    # When this mind's write names it
    answer = api.store(mind, key="mine", content="My fact", supersedes=[theirs["id"]])
    # Then it is unknown (422), nothing is stored, and their memory is untouched
    assert_error(answer, 422, field="supersedes[0]", rule="unknown")
    assert get(api, mind, "/memory")["memories"] == []
    assert get(api, other, f"/memory/{theirs['id']}")["superseded_by"] is None


def test_a_memory_cannot_supersede_itself_nor_close_a_cycle(api: Api, mind: MindHandle) -> None:
    old, new = job_pair(api, mind)
    # When a memory names itself
    itself = api.call("PUT", f"/memory/{new['id']}", json_body={"supersedes": [new["id"]]}, **as_user(mind))
    assert_error(itself, 422, field="supersedes[0]", rule="self")
    # When the replaced one names the memory that replaced it
    cycle = api.call("PUT", f"/memory/{old['id']}", json_body={"supersedes": [new["id"]]}, **as_user(mind))
    assert_error(cycle, 422, field="supersedes[0]", rule="cycle")
    # Then nothing changed
    assert get(api, mind, f"/memory/{new['id']}")["superseded_by"] is None
    assert get(api, mind, f"/memory/{old['id']}")["version"] == 2


def test_one_bad_id_among_good_ones_applies_nothing(api: Api, mind: MindHandle) -> None:
    good = stored(api, mind, key="diet", content="Is vegetarian")
    answer = api.store(
        mind, key="diet_now", content="Is vegan now", supersedes=[good["id"], "mem_missing00000"]
    )
    assert_error(answer, 422, field="supersedes[1]", rule="unknown")
    assert get(api, mind, f"/memory/{good['id']}")["superseded_by"] is None
    assert [m["id"] for m in get(api, mind, "/memory")["memories"]] == [good["id"]]


# ---------------------------------------------------------------- verified memories and proposals


def test_an_agent_superseding_a_verified_memory_makes_that_mark_a_proposal(
    api: Api, mind: MindHandle
) -> None:
    # Given a memory a person stored (verified)
    verified = stored(api, mind, key="address", content="Lives at 14 Elm Street")
    # When an agent stores a newer one naming it
    new = stored(
        api, mind, agent=True, key="address_now", content="Lives at 3 Oak Road", supersedes=[verified["id"]]
    )
    # Then the new memory is stored, and the mark waits for the person
    outcome = new["supersedes"][0]
    assert (outcome["id"], outcome["status"]) == (verified["id"], "proposed")
    kept = get(api, mind, f"/memory/{verified['id']}")
    assert kept["superseded_by"] is None and kept["pending_proposal"] == outcome["proposal_id"]
    proposal = get(api, mind, f"/proposals/{outcome['proposal_id']}")
    assert (proposal["action"], proposal["superseded_by"]) == ("supersede", new["id"])
    # When the person accepts it
    ok(api.call("POST", f"/proposals/{outcome['proposal_id']}/accept", **as_user(mind)))
    # Then the verified memory is marked replaced
    marked = get(api, mind, f"/memory/{verified['id']}")
    assert marked["superseded_by"] == new["id"] and marked["pending_proposal"] is None


def test_a_persons_mark_over_a_verified_memory_applies(api: Api, mind: MindHandle) -> None:
    old, new = job_pair(api, mind)
    assert get(api, mind, f"/memory/{old['id']}")["verified"] is True
    assert new["supersedes"][0]["status"] == "superseded"


# ---------------------------------------------------------------- revival


def test_a_persons_restore_revives_a_replaced_memory(api: Api, mind: MindHandle) -> None:
    old, _ = job_pair(api, mind)
    # When the person restores the replaced memory's version
    answer = api.call("POST", f"/memory/{old['id']}/restore", json_body={"version": 1}, **as_user(mind))
    revived = ok(answer)
    # Then it is current again: unmarked, listed, recalled
    assert revived["superseded_by"] is None and revived["superseded_at"] is None
    assert old["id"] in listed_ids(api, mind, "/memory")
    assert "Works at Acme" in api.call("GET", "/memory/recall", **as_agent(mind)).text


def test_storing_the_replaced_key_again_makes_it_current(api: Api, mind: MindHandle) -> None:
    old, _ = job_pair(api, mind)
    again = stored(api, mind, status=200, key="employer", content="Works at Acme again", tags=["work"])
    assert again["id"] == old["id"] and again["superseded_by"] is None
    assert old["id"] in listed_ids(api, mind, "/memory/by-tag", tag="work")


# ---------------------------------------------------------------- the other doors


def test_batch_items_take_supersedes_each_on_its_own(api: Api, mind: MindHandle) -> None:
    old = stored(api, mind, key="partner", content="Partner is Sam")
    body = {
        "memories": [
            memory_body(key="partner_now", content="Partner is Alex", supersedes=[old["id"]]),
            memory_body(key="other", content="Something else", supersedes=["mem_missing00000"]),
        ]
    }
    answer = ok(api.call("POST", "/memory/batch", json_body=body, **as_agent(mind)))
    first, second = answer["results"]
    assert first["status"] == "created" and first["supersedes"][0]["id"] == old["id"]
    assert second["status"] == "error" and second["error"]["details"][0]["field"] == "supersedes[0]"
    # The person's memory is verified: an agent's batch proposes the mark
    assert first["supersedes"][0]["status"] == "proposed"


def test_a_hook_item_takes_supersedes(api: Api, mind: MindHandle) -> None:
    settings = {"agent_writes_to_verified": "unverify"}
    ok(api.call("PATCH", f"/minds/{mind.id}", json_body=settings, token=mind.jwt))
    old = stored(api, mind, key="city", content="Lives in Lyon")
    hook = create_hook(api, mind)
    answer = ok(
        deliver(api, hook, memory_body(key="city_now", content="Lives in Nice", supersedes=[old["id"]]))
    )
    result = answer["results"][0] if "results" in answer else answer
    assert json.dumps(result).count(old["id"]) >= 1
    # Under `unverify`, the agent's mark applies and the memory is no longer verified
    marked = get(api, mind, f"/memory/{old['id']}")
    assert marked["superseded_by"] is not None and marked["verified"] is False


def test_mcp_remember_and_update_take_supersedes(api: Api, mind: MindHandle) -> None:
    old = ok(api.store(mind, as_agent=True, key="plan", content="Plans to visit Rome in May"), 201)
    failed, text = mcp_tool(
        api, mind.key, "remember", content="Plans to visit Lisbon in May", supersedes=[old["id"]]
    )
    assert not failed, text
    assert json.loads(text)["supersedes"] == [{"id": old["id"], "status": "superseded"}]
    failed, text = mcp_tool(api, mind.key, "update", id=old["id"], supersedes=["mem_missing00000"])
    assert failed and "supersedes[0]" in text


# ---------------------------------------------------------------- webhooks and search


def test_the_mark_is_announced_as_memory_superseded() -> None:
    old = {"id": {"S": "mem_a"}, "version": {"N": "1"}}
    new = {"id": {"S": "mem_a"}, "version": {"N": "2"}, "superseded_by": {"S": "mem_b"}}
    record = {
        "eventName": "MODIFY",
        "eventID": "e1",
        "dynamodb": {
            "Keys": {"pk": {"S": "m_1"}, "sk": {"S": "MEM#fact#x"}},
            "NewImage": {**_image(), **new},
            "OldImage": {**_image(), **old},
            "ApproximateCreationDateTime": 1_800_000_000,
        },
    }
    names = [change.type for change in events.from_stream_record(record)]
    assert names == ["memory.updated", "memory.superseded"]


def _image() -> dict[str, Any]:
    return {
        "pk": {"S": "m_1"}, "sk": {"S": "MEM#fact#x"}, "mind_id": {"S": "m_1"}, "category": {"S": "fact"},
        "key": {"S": "x"}, "content": {"S": "c"}, "tags": {"L": []}, "priority": {"S": "normal"},
        "source": {"S": "agent"}, "verified": {"BOOL": False}, "confidence": {"N": "0.7"},
        "created_at": {"S": "2026-01-01T00:00:00.000Z"}, "updated_at": {"S": "2026-01-01T00:00:00.000Z"},
    }  # fmt: skip


def test_search_leaves_replaced_memories_out_inside_the_index_query(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    old, new = job_pair(api, mind)
    pump.run_once()
    found = get(api, mind, "/memory/search", q="works at")
    assert [r["memory"]["id"] for r in found["results"]] == [new["id"]]
    both = get(api, mind, "/memory/search", q="works at", include_superseded="true")
    marked = {r["memory"]["id"]: r["memory"]["superseded_by"] for r in both["results"]}
    assert marked == {new["id"]: None, old["id"]: new["id"]}


def test_the_marks_land_in_the_same_transaction_as_the_write(api: Api, mind: MindHandle, dynamo: Any) -> None:
    _, new = job_pair(api, mind)
    items = {item["sk"]: item for item in scan(dynamo, MEMORIES) if item["pk"] == mind.id}
    marked = items["MEM#fact#employer"]
    assert marked["superseded_by"] == new["id"]
    # Sparse: out of the recall GSIs, its tag copy after the live ones
    assert "recall_sk" not in marked and "mind_category" not in marked
    assert any(sk.startswith("TAG#04:work#^") for sk in items)


# ---------------------------------------------------------------- backup and restore


def test_a_backup_carries_the_marks_and_its_restore_keeps_them(
    api: Api, mind: MindHandle, dynamo: Any
) -> None:
    # Given a replaced memory (with an expiry and a tag) and the memory that replaced it
    soon = clock.to_iso(clock.now() + timedelta(days=3))
    old = stored(api, mind, key="car", content="Drives a red Fiat", tags=["car"], expires_at=soon)
    new = stored(
        api, mind, key="car_now", content="Drives a blue Tesla", tags=["car"], supersedes=[old["id"]]
    )
    # When the mind is backed up and restored into another
    target = api.create_mind(name="Restored")
    answer = backups.restore(api, target, backups.backup(api, mind))
    assert answer["status"] == "done", answer
    # Then the copy holds the same items (the mark, the sparse keys, the tag copies)
    assert backups.partition(dynamo, target.id) == backups.partition(dynamo, mind.id, as_mind=target.id)
    # And reads leave the replaced memory out there too
    assert get(api, target, f"/memory/{old['id']}")["superseded_by"] == new["id"]
    assert listed_ids(api, target, "/memory/by-tag", tag="car") == [new["id"]]


def test_a_backup_line_with_half_a_mark_is_refused_naming_the_field(api: Api, mind: MindHandle) -> None:
    old, _ = job_pair(api, mind)
    lines = backups.backup(api, mind).splitlines()
    at = backups.line_of(lines, "memory", id=old["id"])
    broken = backups.edited(lines, at, lambda record: record["memory"].pop("superseded_at"))
    target = api.create_mind(name="Restored")
    answer = backups.send(api, target, broken, last=True)
    assert_error(answer, 422, field="memory.superseded_at")


def test_a_rejected_supersede_proposal_leaves_the_verified_memory_current(api: Api, mind: MindHandle) -> None:
    verified = stored(api, mind, key="bank", content="Bank is First National")
    new = stored(
        api, mind, agent=True, key="bank_now", content="Banks with Northside", supersedes=[verified["id"]]
    )
    proposal_id = new["supersedes"][0]["proposal_id"]
    ok(api.call("POST", f"/proposals/{proposal_id}/reject", **as_user(mind)))
    kept = get(api, mind, f"/memory/{verified['id']}")
    assert (kept["superseded_by"], kept["pending_proposal"], kept["verified"]) == (None, None, True)
    assert verified["id"] in listed_ids(api, mind, "/memory")


def test_accepting_a_supersede_whose_newer_memory_is_gone_is_a_409(api: Api, mind: MindHandle) -> None:
    verified = stored(api, mind, key="gym", content="Member of FitLife")
    new = stored(
        api, mind, agent=True, key="gym_now", content="Climbs at Boulder Barn", supersedes=[verified["id"]]
    )
    assert api.call("DELETE", f"/memory/{new['id']}", **as_user(mind)).status == 204
    answer = api.call("POST", f"/proposals/{new['supersedes'][0]['proposal_id']}/accept", **as_user(mind))
    assert_error(answer, 409)
    assert get(api, mind, f"/memory/{verified['id']}")["superseded_by"] is None


def test_a_write_that_is_wholly_a_proposal_marks_nothing(api: Api, mind: MindHandle) -> None:
    # Given two memories a person verified
    city = stored(api, mind, key="city", content="Lives in Lyon")
    other = stored(api, mind, key="city_old", content="Lived in Paris")
    # When an agent rewrites the first (a proposal) naming the second in supersedes
    answer = ok(
        api.store(mind, as_agent=True, key="city", content="Lives in Nice", supersedes=[other["id"]]), 202
    )
    # Then nothing is marked until a person accepts the rewrite
    assert answer["memory"]["id"] == city["id"]
    assert get(api, mind, f"/memory/{other['id']}")["superseded_by"] is None
