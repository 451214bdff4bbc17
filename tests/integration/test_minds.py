"""Minds and Mind Keys through the API (SPEC §2, §3 "Minds")."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.core import clock

from tests.support.api import Api, jwt_for
from tests.support.checks import as_user, assert_error
from tests.support.tables import MEMORIES, MINDS, left_of_mind, mind_items, scan

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def counts(api: Api, user: str) -> dict[str, int]:
    answer = api.call("GET", "/minds", token=jwt_for(user))
    assert answer.status == 200, answer.text
    return {m["id"]: m["memory_count"] for m in answer.json()["minds"]}


def test_creating_a_mind_shows_its_first_key_once(api: Api) -> None:
    # When a person creates a mind
    answer = api.call("POST", "/minds", token=jwt_for("user-1"), json_body={"name": "  Michael's Mind "})
    # Then it is a 201 with the mind and a plain-text Mind Key
    assert answer.status == 201, answer.text
    body = answer.json()
    mind, key = body["mind"], body["mind_key"]
    assert answer.headers["Location"] == f"/minds/{mind['id']}"
    assert mind["id"].startswith("m_") and mind["name"] == "Michael's Mind" and mind["memory_count"] == 0
    assert STAMP.match(mind["created_at"]) and mind["updated_at"] == mind["created_at"]
    assert set(key) == {"id", "key", "label", "scopes", "created_at"}
    assert key["key"].startswith("mk_") and len(key["key"]) > 40 and key["id"].startswith("key_")
    # And the key is never shown again: not by the mind, not by the key list
    again = api.call("GET", f"/minds/{mind['id']}", token=jwt_for("user-1")).text
    listed = api.call("GET", f"/minds/{mind['id']}/keys", token=jwt_for("user-1")).text
    assert key["key"] not in again and key["key"] not in listed
    # And it works
    assert api.call("GET", "/memory", token=key["key"]).status == 200


def test_list_minds_with_memory_counts_that_follow_writes(api: Api) -> None:
    # Given two minds of one user and one of another
    first = api.create_mind("user-1", "First")
    second = api.create_mind("user-1", "Second")
    stranger = api.create_mind("user-2", "Stranger")
    # When memories are created, replaced and deleted
    ids = [api.store(first, key=f"k{i}").json()["id"] for i in range(3)]
    api.store(first, key="k0", content="replaced")  # a replace is not a new memory
    api.call("DELETE", f"/memory/{ids[1]}", **as_user(first))
    api.store(second, as_agent=True, key="k0")
    # Then each list shows the caller's minds only, with live counts
    assert counts(api, "user-1") == {first.id: 2, second.id: 1}
    assert counts(api, "user-2") == {stranger.id: 0}
    # And a user without minds sees an empty list
    assert api.call("GET", "/minds", token=jwt_for("user-3")).json() == {"minds": [], "next_cursor": None}
    # And one mind's count is in its own answer too
    assert api.call("GET", f"/minds/{first.id}", token=first.jwt).json()["memory_count"] == 2


def test_get_and_rename_a_mind(api: Api) -> None:
    mind = api.create_mind("user-1", "Old name")
    got = api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()
    assert (got["id"], got["name"]) == (mind.id, "Old name")
    renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "New name"})
    assert renamed.status == 200, renamed.text
    assert renamed.json()["name"] == "New name" and renamed.json()["created_at"] == got["created_at"]
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["name"] == "New name"


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_renaming_to_an_empty_or_too_long_name_is_a_422(api: Api, name: str) -> None:
    mind = api.create_mind("user-1", "Kept")
    answer = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": name})
    assert_error(answer, 422, field="name", rule="length")
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["name"] == "Kept"


def test_deleting_a_mind_removes_everything_it_held(api: Api, dynamo: Any) -> None:
    # Given a mind with tagged memories and two keys, and another mind that must survive
    mind = api.create_mind("user-1")
    survivor = api.create_mind("user-2")
    second_key = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={}).json()["key"]
    for i in range(5):
        api.store(mind, key=f"k{i}", tags=["a", "b"])
    kept = api.store(survivor, tags=["a"]).json()
    groups = mind_items(dynamo, mind.id)
    assert (len(groups["memory"]), len(groups["pointer"]), len(groups["tag"])) == (5, 5, 10)
    # When its owner deletes it
    answer = api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt)
    # Then it is a 204 and nothing of it is left in either table
    assert answer.status == 204 and answer.body == b""
    assert mind_items(dynamo, mind.id) == {"memory": [], "pointer": [], "tag": []}
    assert [i for i in scan(dynamo, MEMORIES) if i["pk"] == mind.id] == []
    assert left_of_mind(dynamo, mind.id) == []
    # But for one marker telling the orphan sweep to drop its search index, which expires by itself
    (marker,) = [i for i in scan(dynamo, MINDS) if mind.id in str(i)]
    assert marker["pk"].startswith("DROPINDEX#") and marker["mind_id"] == mind.id and marker["ttl"] > 0
    # And its keys stop working, and the mind is gone
    for key in (mind.key, second_key):
        assert_error(api.call("GET", "/memory", token=key), 401)
    assert_error(api.call("GET", f"/minds/{mind.id}", token=mind.jwt), 404)
    assert_error(api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt), 404)
    # And the other mind is untouched
    assert api.call("GET", f"/memory/{kept['id']}", token=survivor.key).status == 200


def test_another_users_mind_is_a_404_on_every_route(api: Api) -> None:
    theirs = api.create_mind("user-2", "Theirs")
    me = jwt_for("user-1")
    routes = [
        ("GET", f"/minds/{theirs.id}", None),
        ("PATCH", f"/minds/{theirs.id}", {"name": "Mine now"}),
        ("DELETE", f"/minds/{theirs.id}", None),
        ("POST", f"/minds/{theirs.id}/keys", {"label": "backdoor"}),
        ("GET", f"/minds/{theirs.id}/keys", None),
        ("DELETE", f"/minds/{theirs.id}/keys/{theirs.key_id}", None),
    ]
    for method, path, body in routes:
        assert_error(api.call(method, path, token=me, json_body=body), 404)
        # exactly like a mind that does not exist
        assert_error(
            api.call(method, path.replace(theirs.id, "m_doesnotexist"), token=me, json_body=body), 404
        )
    # And their mind, name and key are intact
    assert api.call("GET", f"/minds/{theirs.id}", token=theirs.jwt).json()["name"] == "Theirs"
    assert api.call("GET", "/memory", token=theirs.key).status == 200


def test_a_user_whose_sub_is_not_ascii_owns_their_minds_like_anyone(api: Api) -> None:
    # Given a mind of a user whose JWT sub is not ASCII (an OIDC provider may issue such names)
    mind = api.create_mind("józef@例え.jp", "Józef's Mind")
    # When they read, rename and use it, and another non-ASCII user tries the same
    read = api.call("GET", f"/minds/{mind.id}", token=mind.jwt)
    stored = api.store(mind)
    stranger = api.call("GET", f"/minds/{mind.id}", token=jwt_for("jósef@例え.jp"))
    renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "Renamed"})
    # Then the owner gets their mind, and the stranger a 404, never a 500
    assert read.status == 200 and read.json()["name"] == "Józef's Mind", read.text
    assert stored.status == 201, stored.text
    assert_error(stranger, 404)
    assert renamed.status == 200, renamed.text
    # And the owner can delete it
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204


def test_keys_list_shows_metadata_and_never_a_secret(api: Api) -> None:
    # Given a mind with its first key and one labelled key
    mind = api.create_mind("user-1")
    made = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "laptop agent"})
    assert made.status == 201, made.text
    second = made.json()
    assert set(second) == {"id", "key", "label", "scopes", "created_at"} and second["label"] == "laptop agent"
    # When the keys are listed
    listed = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()
    # Then each shows id, label, prefix and timestamps, and no secret or hash
    by_id = {k["id"]: k for k in listed["keys"]}
    assert set(by_id) == {mind.key_id, second["id"]} and listed["next_cursor"] is None
    for key_id, secret in ((mind.key_id, mind.key), (second["id"], second["key"])):
        shown = by_id[key_id]
        assert set(shown) == {"id", "label", "prefix", "scopes", "created_at", "last_used_at"}
        assert shown["prefix"].startswith("mk_") and secret.startswith(shown["prefix"])
        assert len(shown["prefix"]) < len(secret) // 3
    assert by_id[mind.key_id]["label"] == "default"


def test_last_used_at_is_set_when_a_key_is_used(api: Api) -> None:
    mind = api.create_mind("user-1")
    before = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"][0]
    assert before["last_used_at"] is None
    api.store(mind, as_agent=True)
    after = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"][0]
    assert after["last_used_at"] is not None and STAMP.match(after["last_used_at"])


def test_last_used_at_is_written_at_most_once_a_minute(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a key first used at 09:00:00
    moment = [datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)]
    monkeypatch.setattr(clock, "now", lambda: moment[0])
    mind = api.create_mind("user-1")

    def used_at(seconds: int) -> str:
        moment[0] = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC) + timedelta(seconds=seconds)
        api.store(mind, as_agent=True)
        return str(
            api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"][0]["last_used_at"]
        )

    first = used_at(0)
    # When it is used again within the minute, then after it
    # Then the stamp stays until the minute has passed, and moves after
    assert used_at(59) == first == "2026-11-30T09:00:00.000Z"
    assert used_at(61) == "2026-11-30T09:01:01.000Z"


def test_a_new_key_defaults_its_label_and_works(api: Api) -> None:
    mind = api.create_mind("user-1")
    made = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt)
    assert made.status == 201, made.text
    assert made.json()["label"] == "default"
    assert api.store(mind, as_agent=False).status == 201
    assert api.call("GET", "/memory", token=made.json()["key"]).json()["memories"][0]["key"] == "home_city"


# ---------------------------------------------------------------- X-Mind-Id rules for people


def test_a_user_with_one_mind_may_leave_out_x_mind_id(api: Api) -> None:
    mind = api.create_mind("user-1")
    stored = api.call(
        "POST", "/memory", token=mind.jwt, json_body={"category": "fact", "key": "a", "content": "b"}
    )
    assert stored.status == 201 and stored.json()["mind_id"] == mind.id
    assert len(api.call("GET", "/memory", token=mind.jwt).json()["memories"]) == 1


def test_a_user_with_several_minds_must_name_one(api: Api) -> None:
    first = api.create_mind("user-1", "First")
    second = api.create_mind("user-1", "Second")
    body = {"category": "fact", "key": "a", "content": "b"}
    # Without X-Mind-Id: a 400 that says how to name one
    error = assert_error(api.call("POST", "/memory", token=first.jwt, json_body=body), 400)
    assert "X-Mind-Id" in error["message"]
    assert_error(api.call("GET", "/memory", token=first.jwt), 400)
    # With it (header or query parameter): each mind gets its own memory
    assert api.call("POST", "/memory", json_body=body, **as_user(second)).json()["mind_id"] == second.id
    by_query = api.call("POST", "/memory", token=first.jwt, json_body=body, query={"mind_id": first.id})
    assert by_query.json()["mind_id"] == first.id
    assert counts(api, "user-1") == {first.id: 1, second.id: 1}


def test_a_user_without_a_mind_gets_a_404_that_says_how_to_make_one(api: Api) -> None:
    error = assert_error(api.call("GET", "/memory", token=jwt_for("user-new")), 404)
    assert "POST /minds" in error["message"]
    assert_error(
        api.call(
            "POST",
            "/memory",
            token=jwt_for("user-new"),
            json_body={"category": "fact", "key": "a", "content": "b"},
        ),
        404,
    )


def test_a_mind_deleted_while_a_key_is_made_or_it_is_renamed_is_a_404(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind that disappears right after its owner's role was checked (a racing DELETE)
    from synapse.storage import tables
    from synapse.teams import roles

    mind = api.create_mind()
    checked = roles.require

    def checked_then_deleted(mind_id: str, user_id: str, needed: str) -> Any:
        found = checked(mind_id, user_id, needed)
        dynamo.delete_item(TableName=MINDS, Key=tables.dump(tables.mind_key(mind_id)))
        return found

    monkeypatch.setattr(roles, "require", checked_then_deleted)
    # When a key is made for it, or it is renamed
    made = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "late"})
    renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "late"})
    # Then both are 404, and no key for the vanished mind was left behind
    assert_error(made, 404)
    assert_error(renamed, 404)
    assert [i for i in scan(dynamo, MINDS) if i["sk"].startswith("KEY#") and "late" in str(i)] == []
    assert [i for i in scan(dynamo, MINDS) if i["sk"] == "MIND"] == []


def test_a_delete_cut_short_can_be_sent_again_to_finish(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.memory import purge

    # Given a mind whose first DELETE dies while purging memories (as a Lambda timeout would)
    mind = api.create_mind()
    for i in range(3):
        api.store(mind, key=f"k{i}", tags=["t"])
    purged = purge.purge_mind

    def timed_out(mind_id: str) -> int:
        raise TimeoutError("Task timed out")

    monkeypatch.setattr(purge, "purge_mind", timed_out)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 500
    # Then the mind and its keys are already gone, though its memories are still stored
    assert_error(api.call("GET", f"/minds/{mind.id}", token=mind.jwt), 404)
    assert_error(api.call("GET", "/memory", token=mind.key), 401)
    assert len(mind_items(dynamo, mind.id)["memory"]) == 3
    # And nobody else can finish (or probe) the deletion
    assert_error(api.call("DELETE", f"/minds/{mind.id}", token=jwt_for("user-2")), 404)
    # When its owner sends the DELETE again
    monkeypatch.setattr(purge, "purge_mind", purged)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # Then nothing of the mind is left, and a third DELETE is a 404
    assert [i for i in scan(dynamo, MEMORIES) if i["pk"] == mind.id] == []
    assert left_of_mind(dynamo, mind.id) == []
    assert_error(api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt), 404)


def test_a_delete_cut_short_while_removing_credentials_leaves_none_that_works(
    api: Api, dynamo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.storage import tables
    from synapse.webhooks import signing

    # Given a mind with a Mind Key and a hook, whose DELETE dies right after DynamoDB removed the
    # listed items of its keys or hooks (the call that did so may have held their lookups too)
    mind = api.create_mind()
    hook = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt).json()
    whole = tables.batch_delete

    def dies_after_listed_items(table: str, keys: list[dict[str, str]]) -> None:
        listed = [k for k in keys if k["pk"].startswith("MIND#") and k["sk"].startswith(("KEY#", "HOOK#"))]
        whole(table, listed or keys)
        if listed:
            raise TimeoutError("Task timed out")

    monkeypatch.setattr(tables, "batch_delete", dies_after_listed_items)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 500
    monkeypatch.undo()
    # When its owner sends the DELETE again, as they are told to
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # Then neither the key nor the hook works any more
    assert_error(api.call("GET", "/memory", token=mind.key), 401)
    body = b'{"category":"fact","key":"a","content":"b"}'
    signed = {
        signing.HEADER: signing.header_value([hook["secret"]], body),
        "content-type": "application/json",
    }
    assert_error(api.call("POST", f"/hooks/{hook['id']}", raw_body=body, headers=signed), 401)
    assert left_of_mind(dynamo, mind.id) == []
