"""Minds a team shares (issue 25): invitations by user id and by verified email, roles and what
they allow, isolation, attribution, minds from before members, and deleting a shared mind."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from synapse.storage import tables
from synapse.webhooks import delivery_queue

from infra.gateway import LambdaContext, load_handler
from infra.local_queue import LocalQueue
from infra.stream_pump import StreamReader, admitted, stream_filters, stream_functions
from tests.support.api import Api, jwt_for, memory_body
from tests.support.checks import assert_error
from tests.support.clock import MovableClock
from tests.support.clock import movable_clock_fixture as movable_clock_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan
from tests.support.teams import accept, invitation_token, invite, join, role_of, team

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def mind_items(dynamo: Any, mind_id: str) -> list[dict[str, Any]]:
    return [i for i in scan(dynamo, MINDS) if i["pk"] == f"MIND#{mind_id}"]


# ---------------------------------------------------------------- invitations


def test_an_invited_person_previews_accepts_and_sees_the_mind_with_their_role(api: Api) -> None:
    # Given an owner's invitation of a user id as editor
    mind = api.create_mind(user="owner-1", name="Support")
    made = invite(api, mind, role="editor", user_id="sam")
    assert made.status == 201, made.text
    created = made.json()
    assert created["invitation"]["status"] == "pending" and created["invitation"]["invited_by"] == "owner-1"
    assert created["link"].endswith(f"/console#/accept?token={created['token']}")
    sam = jwt_for("sam")
    # When Sam previews it, Then he sees what is offered, and it is not used up
    preview = api.call("POST", "/invitations/preview", token=sam, json_body={"token": created["token"]})
    assert preview.status == 200, preview.text
    assert preview.json()["mind"] == {"id": mind.id, "name": "Support"}
    # When he accepts it
    joined = accept(api, created["token"], sam)
    # Then he is an editor of the mind, which he lists with his role
    assert joined.status == 200, joined.text
    assert joined.json()["role"] == "editor" and joined.json()["mind"]["role"] == "editor"
    listed = api.call("GET", "/minds", token=sam).json()["minds"]
    assert [(m["id"], m["role"]) for m in listed] == [(mind.id, "editor")]
    members = api.call("GET", f"/minds/{mind.id}/members", token=sam).json()["members"]
    assert {(m["user_id"], m["role"], m["invited_by"]) for m in members} == {
        ("owner-1", "owner", None),
        ("sam", "editor", "owner-1"),
    }
    # And the invitation is no longer pending
    pending = api.call("GET", f"/minds/{mind.id}/invitations", token=mind.jwt).json()["invitations"]
    assert pending == []


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({}, "email_missing"),
        ({"email": "sam@example.com", "email_verified": False}, "email_unverified"),
        ({"email": "sam@example.com"}, "email_unverified"),
        ({"email": "other@example.com", "email_verified": True}, "email_mismatch"),
    ],
)
def test_an_email_invitation_needs_that_email_verified(api: Api, claims: dict[str, Any], reason: str) -> None:
    # Given an invitation of sam@example.com
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="viewer", email="Sam@Example.com")
    # When someone whose JWT lacks that verified email accepts it
    answer = accept(api, token, jwt_for("someone", **claims))
    # Then it is a 403 naming why, and the invitation stays pending
    error = assert_error(answer, 403)
    assert error["details"] == [{"reason": reason}]
    assert len(api.call("GET", f"/minds/{mind.id}/invitations", token=mind.jwt).json()["invitations"]) == 1


@pytest.mark.parametrize("verified", [True, "true"])  # Cognito sends a boolean; some OIDC IdPs a string
def test_a_verified_email_matches_whatever_its_case(api: Api, verified: Any) -> None:
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="reviewer", email="sam@example.com")
    sam = jwt_for("sam-sub", email="SAM@example.com", email_verified=verified)
    joined = accept(api, token, sam)
    assert joined.status == 200, joined.text
    member = next(
        m
        for m in api.call("GET", f"/minds/{mind.id}/members", token=sam).json()["members"]
        if m["user_id"] == "sam-sub"
    )
    assert member["role"] == "reviewer" and member["email"] == "SAM@example.com"


def test_a_user_id_invitation_is_for_that_user_only(api: Api) -> None:
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="viewer", user_id="sam")
    assert assert_error(accept(api, token, jwt_for("mallory")), 403)["details"] == [
        {"reason": "user_mismatch"}
    ]
    assert accept(api, token, jwt_for("sam")).status == 200


def test_an_expired_invitation_is_refused_with_410(api: Api, movable_clock: MovableClock) -> None:
    # Given an invitation made 7 days and a second ago
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="viewer", user_id="sam")
    movable_clock.advance(days=7, seconds=1)
    # When it is accepted, Then it is a 410 and Sam is not a member
    assert assert_error(accept(api, token, jwt_for("sam")), 410)["code"] == "invitation_expired"
    assert api.call("GET", "/minds", token=jwt_for("sam")).json()["minds"] == []
    # And listing the pending invitations reaps it
    assert api.call("GET", f"/minds/{mind.id}/invitations", token=mind.jwt).json()["invitations"] == []


def test_a_revoked_or_declined_invitation_is_refused(api: Api) -> None:
    mind = api.create_mind(user="owner-1")
    made = invite(api, mind, role="viewer", user_id="sam").json()
    revoked = api.call("DELETE", f"/minds/{mind.id}/invitations/{made['invitation']['id']}", token=mind.jwt)
    assert revoked.status == 204, revoked.text
    assert_error(accept(api, made["token"], jwt_for("sam")), 404)
    # And a declined one too
    token = invitation_token(api, mind, role="viewer", user_id="sam")
    declined = api.call("POST", "/invitations/decline", token=jwt_for("sam"), json_body={"token": token})
    assert declined.status == 204, declined.text
    assert_error(accept(api, token, jwt_for("sam")), 404)
    actions = [
        e["action"] for e in api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt).json()["events"]
    ]
    assert actions[:3] == ["invitation.declined", "member.invited", "invitation.revoked"]


def test_a_member_cannot_be_invited_again_by_user_id(api: Api) -> None:
    world = team(api)
    answer = invite(api, world.mind, role="owner", user_id=world.users["viewer"])
    assert assert_error(answer, 409)["code"] == "already_member"


# ---------------------------------------------------------------- roles


def test_an_editors_write_is_unverified_and_its_change_to_a_verified_memory_is_a_proposal(api: Api) -> None:
    # Given a team mind where the reviewer stored (so vouched for) a memory
    world = team(api)
    vouched = api.call("POST", "/memory", json_body=memory_body(), **world.as_member("reviewer"))
    assert vouched.status == 201 and vouched.json()["verified"] is True, vouched.text
    # When the editor stores a new memory, Then it is theirs as a person, unverified
    own = api.call("POST", "/memory", json_body=memory_body(key="desk"), **world.as_member("editor"))
    assert own.status == 201, own.text
    assert (own.json()["source"], own.json()["verified"]) == ("user", False)
    # When the editor changes the vouched-for memory, Then it is a proposal and the memory stays
    changed = api.call(
        "PUT",
        f"/memory/{vouched.json()['id']}",
        json_body={"content": "Lives in Hamburg"},
        **world.as_member("editor"),
    )
    assert changed.status == 202, changed.text
    proposal = changed.json()["proposal"]
    assert proposal["proposed_by"] == {"source": "user", "user_id": world.users["editor"]}
    # When the reviewer accepts it, Then the decision and the verification name the reviewer
    accepted = api.call("POST", f"/proposals/{proposal['id']}/accept", **world.as_member("reviewer"))
    assert accepted.status == 200, accepted.text
    assert accepted.json()["proposal"]["decided_by"]["user_id"] == world.users["reviewer"]
    assert accepted.json()["memory"]["verified_by"] == world.users["reviewer"]
    # And the reviewer verifies the editor's memory, named in its history
    verified = api.call("POST", f"/memory/{own.json()['id']}/verify", **world.as_member("reviewer"))
    assert verified.json()["verified_by"] == world.users["reviewer"]
    history = api.call("GET", f"/memory/{own.json()['id']}/history", **world.as_member("viewer")).json()
    assert [r["changed_by"]["user_id"] for r in history["revisions"]] == [
        world.users["reviewer"],
        world.users["editor"],
    ]


def test_membership_changes_are_audited_and_sent_as_webhook_events(
    api: Api, configure: Configure, dynamo: Any
) -> None:
    # Given a mind with a webhook subscribed to member events, a local delivery queue, and the
    # webhook producer reading the Memories stream as Lambda hands it over (its FilterCriteria)
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    queue = LocalQueue()
    delivery_queue.install(queue)
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    reader = StreamReader(dynamo, streams, "test-memories")
    producer = load_handler(*stream_functions()["WebhookEventsFunction"])
    try:
        mind = api.create_mind(user="owner-1")
        subscribed = api.call(
            "POST",
            f"/minds/{mind.id}/webhooks",
            token=mind.jwt,
            json_body={"url": "http://127.0.0.1:9/h", "events": ["member.joined", "member.role_changed"]},
        )
        assert subscribed.status == 201, subscribed.text
        # When Sam joins and is made reviewer
        join(api, mind, "sam", "editor")
        changed = api.call(
            "PATCH", f"/minds/{mind.id}/members/sam", token=mind.jwt, json_body={"role": "reviewer"}
        )
        assert changed.status == 200 and changed.json()["role"] == "reviewer", changed.text
        # Then the audit says so, by whom
        events = api.call("GET", f"/minds/{mind.id}/audit", token=mind.jwt).json()["events"]
        assert [(e["action"], e["by"]["user_id"]) for e in events[:3]] == [
            ("member.role_changed", "owner-1"),
            ("member.joined", "sam"),
            ("member.invited", "owner-1"),
        ]
        # And the two subscribed events were queued from the stream, in order
        records = [r for r in reader.poll() if admitted(r, stream_filters("WebhookEventsFunction"))]
        assert producer({"Records": records}, LambdaContext("webhook_events")) == {"batchItemFailures": []}
        sent = [json.loads(m.body)["event"] for m in queue.sent]
        assert [(e["type"], e["data"]["user_id"]) for e in sent] == [
            ("member.joined", "sam"),
            ("member.role_changed", "sam"),
        ]
        assert sent[1]["data"]["to"] == "reviewer" and sent[1]["data"]["by"]["user_id"] == "owner-1"
    finally:
        delivery_queue.install(None)


def test_ownership_moves_in_one_transfer(api: Api) -> None:
    world = team(api)
    moved = api.call(
        "POST",
        f"/minds/{world.mind.id}/transfer",
        token=world.mind.jwt,
        json_body={"user_id": world.users["editor"]},
    )
    assert moved.status == 200, moved.text
    assert [(m["user_id"], m["role"]) for m in moved.json()["members"]] == [
        (world.users["editor"], "owner"),
        ("owner-1", "reviewer"),
    ]
    # And the former owner may no longer manage keys; the new one may
    assert_error(api.call("GET", f"/minds/{world.mind.id}/keys", token=world.mind.jwt), 403)
    assert api.call("GET", f"/minds/{world.mind.id}/keys", token=world.tokens["editor"]).status == 200


def test_a_transfer_names_another_member_and_an_invitation_one_person(api: Api) -> None:
    # Given a team
    world = team(api)
    # When its owner transfers the mind to themselves, it is a conflict with who they are (409)
    to_self = api.call(
        "POST", f"/minds/{world.mind.id}/transfer", token=world.mind.jwt, json_body={"user_id": "owner-1"}
    )
    assert assert_error(to_self, 409)["details"] == [{"field": "user_id", "rule": "not_self"}]
    # And an invitation naming both an email and a user id is refused (the document's oneOf)
    both = {"role": "viewer", "email": "sam@example.com", "user_id": "sam"}
    invited = api.call("POST", f"/minds/{world.mind.id}/invitations", token=world.mind.jwt, json_body=both)
    assert assert_error(invited, 422)["details"][0]["rule"] == "one_of"


# ---------------------------------------------------------------- isolation


def test_a_removed_members_next_request_is_refused(api: Api) -> None:
    # Given a viewer who reads the mind
    world = team(api)
    assert api.call("GET", "/memory/recall", **world.as_member("viewer")).status == 200
    # When the owner removes them
    removed = api.call(
        "DELETE", f"/minds/{world.mind.id}/members/{world.users['viewer']}", token=world.mind.jwt
    )
    assert removed.status == 204, removed.text
    # Then their very next request is a 404, as for any mind not theirs
    assert_error(api.call("GET", "/memory/recall", **world.as_member("viewer")), 404)
    assert_error(api.call("GET", f"/minds/{world.mind.id}", token=world.tokens["viewer"]), 404)


def test_a_member_may_leave_but_not_remove_another(api: Api) -> None:
    world = team(api)
    others = f"/minds/{world.mind.id}/members/{world.users['editor']}"
    assert assert_error(api.call("DELETE", others, token=world.tokens["reviewer"]), 403)["details"] == [
        {"role": "owner"}
    ]
    leave = api.call(
        "DELETE", f"/minds/{world.mind.id}/members/{world.users['reviewer']}", token=world.tokens["reviewer"]
    )
    assert leave.status == 204
    assert role_of(api, world, world.users["reviewer"]) is None


def test_a_member_of_one_mind_sees_nothing_of_another_of_the_same_owner(api: Api) -> None:
    # Given an owner with two minds, A shared with a viewer, B not
    world = team(api)
    other = api.create_mind(user="owner-1", name="Private")
    stored = api.call(
        "POST", "/memory", token=other.jwt, json_body=memory_body(), headers={"X-Mind-Id": other.id}
    )
    viewer = world.tokens["viewer"]
    # When the viewer asks for B in every way, Then B does not exist for them
    assert_error(api.call("GET", f"/minds/{other.id}", token=viewer), 404)
    assert_error(api.call("GET", "/memory/recall", token=viewer, headers={"X-Mind-Id": other.id}), 404)
    assert_error(
        api.call("GET", f"/memory/{stored.json()['id']}", token=viewer, headers={"X-Mind-Id": other.id}), 404
    )
    assert_error(api.call("GET", f"/minds/{other.id}/members", token=viewer), 404)
    # And B's memory is not found through A either
    assert_error(api.call("GET", f"/memory/{stored.json()['id']}", **world.as_member("viewer")), 404)
    assert [m["id"] for m in api.call("GET", "/minds", token=viewer).json()["minds"]] == [world.mind.id]


def test_x_mind_id_may_be_left_out_only_for_a_member_of_one_mind(api: Api) -> None:
    world = team(api)
    viewer = world.tokens["viewer"]
    assert api.call("GET", "/memory", token=viewer).status == 200
    api.create_mind(user=world.users["viewer"], name="Mine")
    assert_error(api.call("GET", "/memory", token=viewer), 400)


# ---------------------------------------------------------------- minds from before members


def test_a_mind_from_before_members_is_owned_by_its_creator_until_materialised(api: Api, dynamo: Any) -> None:
    # Given a mind written as before members existed: no member item, no counts
    mind = api.create_mind(user="owner-1")
    key = tables.dump({"pk": f"MIND#{mind.id}", "sk": "MEMBER#owner-1"})
    dynamo.delete_item(TableName=MINDS, Key=key)
    dynamo.update_item(
        TableName=MINDS,
        Key=tables.dump(tables.mind_key(mind.id)),
        UpdateExpression="REMOVE member_count, owner_count, invitation_count",
    )
    # Then its creator is its owner: they read, manage keys and are listed as the one member
    assert api.call("GET", "/memory", token=mind.jwt).status == 200
    assert api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).status == 200
    members = api.call("GET", f"/minds/{mind.id}/members", token=mind.jwt).json()["members"]
    assert [(m["user_id"], m["role"]) for m in members] == [("owner-1", "owner")]
    # When they invite someone, Then the mind is materialised, once, and the invitation works
    join(api, mind, "sam", "viewer")
    item = tables.get(tables.minds_table(), tables.mind_key(mind.id)) or {}
    assert (item["member_count"], item["owner_count"]) == (2, 1)
    assert [m["id"] for m in api.call("GET", "/minds", token=mind.jwt).json()["minds"]] == [mind.id]


def test_a_legacy_owner_lists_their_minds_with_the_owner_role(api: Api, dynamo: Any) -> None:
    mind = api.create_mind(user="owner-1")
    dynamo.delete_item(TableName=MINDS, Key=tables.dump({"pk": f"MIND#{mind.id}", "sk": "MEMBER#owner-1"}))
    dynamo.update_item(
        TableName=MINDS, Key=tables.dump(tables.mind_key(mind.id)), UpdateExpression="REMOVE owner_count"
    )
    listed = api.call("GET", "/minds", token=mind.jwt).json()["minds"]
    assert [(m["id"], m["role"]) for m in listed] == [(mind.id, "owner")]


# ---------------------------------------------------------------- deleting a shared mind


def test_deleting_a_mind_deletes_its_members_and_invitations(api: Api, dynamo: Any) -> None:
    world = team(api)
    token = invitation_token(api, world.mind, role="viewer", user_id="later")
    deleted = api.call("DELETE", f"/minds/{world.mind.id}", token=world.mind.jwt)
    assert deleted.status == 204, deleted.text
    assert mind_items(dynamo, world.mind.id) == []
    assert [i for i in scan(dynamo, MINDS) if i["pk"].startswith("INVITEHASH#")] == []
    assert_error(accept(api, token, jwt_for("later")), 404)
    assert api.call("GET", "/minds", token=world.tokens["viewer"]).json()["minds"] == []
