"""Removal and demotion end what the member held (issue 32 item 2): the invitations an owner issued,
and the Mind Keys, inbound hooks and app grants they created, are revoked when they are removed or
lose the owner role (audited with the reason), and every door checks that whoever made a credential
still holds the role it was made under: an invitation's accept, a key's or an access token's
request, a hook's delivery, a code's exchange and a grant's refresh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from synapse.minds import minds
from synapse.storage import tables
from synapse.teams import members, roles

from tests.integration.test_hooks import create_hook, deliver
from tests.support.api import Api, MindHandle, jwt_for, memory_body
from tests.support.checks import assert_error, ok
from tests.support.oauth import Flow, mcp
from tests.support.races import dynamodb_hook
from tests.support.teams import Team, accept, invitation_token, join, role_of


@dataclass
class Shared:
    """A mind created by `creator`, with `second` joined as a second owner (both JWTs)."""

    mind: MindHandle
    second: MindHandle  # the same mind, seen with the second owner's JWT and a key they created


def shared(api: Api) -> Shared:
    mind = api.create_mind(user="creator", name="Team Mind")
    jwt = join(api, mind, "alice", "owner")
    key = ok(api.call("POST", f"/minds/{mind.id}/keys", token=jwt, json_body={"label": "alice's"}), 201)
    return Shared(mind, MindHandle(mind.id, jwt, key["key"], key["id"]))


def remove(api: Api, team: Shared, user: str = "alice") -> None:
    answer = api.call("DELETE", f"/minds/{team.mind.id}/members/{user}", token=team.mind.jwt)
    assert answer.status == 204, answer.text


def demote(api: Api, team: Shared, role: str = "editor", user: str = "alice") -> None:
    answer = api.call(
        "PATCH", f"/minds/{team.mind.id}/members/{user}", token=team.mind.jwt, json_body={"role": role}
    )
    assert answer.status == 200, answer.text


def ends_role(api: Api, team: Shared, how: str) -> None:
    remove(api, team) if how == "removed" else demote(api, team)


def audit(api: Api, team: Shared, action: str) -> list[dict[str, Any]]:
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/audit", token=team.mind.jwt, query={"limit": 100}))
    return [event["target"] for event in listed["events"] if event["action"] == action]


def recall(api: Api, key: str) -> Any:
    return api.call("GET", "/memory/recall", token=key)


def drop_member_item(dynamo: Any, mind_id: str, user: str) -> None:
    """What a removal that revoked nothing would leave: the member gone, their credentials kept."""
    dynamo.delete_item(TableName=tables.minds_table(), Key=tables.dump(roles.member_key(mind_id, user)))


HOW = ["removed", "demoted"]

# ---------------------------------------------------------------- invitations


def test_a_removed_owners_second_account_cannot_join_and_remove_the_creator(api: Api) -> None:
    # Given alice, an owner, invites her second account as owner
    team = shared(api)
    token = invitation_token(api, team.second, role="owner", user_id="alice-2")
    # When the creator removes alice, and the second account then accepts
    remove(api, team)
    answer = accept(api, token, jwt_for("alice-2"))
    # Then the invitation is gone (404): the second account never joins, the creator stays owner
    assert_error(answer, 404)
    assert role_of(api, _team_view(team), "alice-2") is None
    assert role_of(api, _team_view(team), "creator") == "owner"
    # And the revocation is audited with its reason
    [revoked] = audit(api, team, "invitation.revoked")
    assert revoked["reason"] == "member_removed" and revoked["invited_by"] == "alice"


def test_a_demoted_owners_invitations_are_revoked(api: Api) -> None:
    team = shared(api)
    token = invitation_token(api, team.second, role="viewer", user_id="bob")
    demote(api, team, "reviewer")
    assert_error(accept(api, token, jwt_for("bob")), 404)
    pending = ok(api.call("GET", f"/minds/{team.mind.id}/invitations", token=team.mind.jwt))
    assert pending["invitations"] == []
    assert audit(api, team, "invitation.revoked")[0]["reason"] == "member_demoted"


def test_accept_refuses_an_invitation_whose_inviter_is_no_longer_an_owner(api: Api, dynamo: Any) -> None:
    # Given an invitation that outlived its inviter's removal (as one written at the same moment could)
    team = shared(api)
    token = invitation_token(api, team.second, role="owner", user_id="alice-2")
    drop_member_item(dynamo, team.mind.id, "alice")
    # When the invitee accepts, Then it is refused as a withdrawn invitation, and nobody joins
    error = assert_error(accept(api, token, jwt_for("alice-2")), 404)
    assert "no longer" in error["message"]
    assert role_of(api, _team_view(team), "alice-2") is None


def test_another_owners_invitations_and_credentials_are_untouched(api: Api) -> None:
    team = shared(api)
    token = invitation_token(api, team.mind, role="viewer", user_id="bob")
    remove(api, team)
    assert recall(api, team.mind.key).status == 200
    assert accept(api, token, jwt_for("bob")).status == 200


# ---------------------------------------------------------------- Mind Keys, hooks, grants


@pytest.mark.parametrize("how", HOW)
def test_a_key_of_a_removed_or_demoted_owner_stops_working(api: Api, how: str) -> None:
    team = shared(api)
    assert recall(api, team.second.key).status == 200
    ends_role(api, team, how)
    assert_error(recall(api, team.second.key), 401)
    assert_error(api.call("POST", "/memory", token=team.second.key, json_body=memory_body()), 401)
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/keys", token=team.mind.jwt))["keys"]
    assert [key["id"] for key in listed] == [team.mind.key_id]
    [revoked] = audit(api, team, "key.revoked")
    assert revoked == {
        "key_id": team.second.key_id,
        "label": "alice's",
        "reason": f"member_{how}",
        "created_by": "alice",
    }


def test_a_key_whose_creator_lost_the_role_is_refused_even_if_it_was_not_revoked(
    api: Api, dynamo: Any
) -> None:
    team = shared(api)
    drop_member_item(dynamo, team.mind.id, "alice")
    assert_error(recall(api, team.second.key), 401)
    assert recall(api, team.mind.key).status == 200


@pytest.mark.parametrize("how", HOW)
def test_a_hook_of_a_removed_or_demoted_owner_refuses_deliveries(api: Api, how: str) -> None:
    team = shared(api)
    hook = create_hook(api, team.second, label="alice's hook")
    assert deliver(api, hook, memory_body(key="first")).status == 200
    ends_role(api, team, how)
    assert_error(deliver(api, hook, memory_body(key="second")), 401)
    assert ok(api.call("GET", f"/minds/{team.mind.id}/hooks", token=team.mind.jwt))["hooks"] == []
    [revoked] = audit(api, team, "hook.revoked")
    assert revoked["reason"] == f"member_{how}" and revoked["hook_id"] == hook.id


def test_a_hook_whose_creator_lost_the_role_is_refused_even_if_it_was_not_revoked(
    api: Api, dynamo: Any
) -> None:
    team = shared(api)
    hook = create_hook(api, team.second)
    drop_member_item(dynamo, team.mind.id, "alice")
    assert_error(deliver(api, hook, memory_body()), 401)


@pytest.mark.parametrize("how", HOW)
def test_a_grant_of_a_removed_or_demoted_owner_is_revoked(api: Api, how: str) -> None:
    team = shared(api)
    flow = Flow(api)
    tokens = flow.tokens(team.second)
    assert mcp(api, tokens["access_token"]).status == 200
    ends_role(api, team, how)
    assert_error(mcp(api, tokens["access_token"]), 401)
    refreshed = flow.refresh(tokens["refresh_token"])
    assert refreshed.status == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text
    assert ok(api.call("GET", f"/minds/{team.mind.id}/grants", token=team.mind.jwt))["grants"] == []
    [revoked] = audit(api, team, "grant.revoked")
    assert revoked["reason"] == f"member_{how}"


def test_a_grant_whose_approver_lost_the_role_refuses_requests_and_refresh(api: Api, dynamo: Any) -> None:
    team = shared(api)
    flow = Flow(api)
    tokens = flow.tokens(team.second)
    drop_member_item(dynamo, team.mind.id, "alice")
    assert_error(mcp(api, tokens["access_token"]), 401)
    refreshed = flow.refresh(tokens["refresh_token"])
    assert refreshed.status == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text


@pytest.mark.parametrize("how", HOW)
def test_a_code_approved_by_an_owner_who_then_lost_the_role_is_not_exchanged(api: Api, how: str) -> None:
    # Given an authorization code alice approved as owner, not yet exchanged
    team = shared(api)
    flow = Flow(api)
    code = flow.code(team.second)
    # When alice is removed or demoted, and the app then exchanges the code
    ends_role(api, team, how)
    answer = flow.exchange(code)
    # Then there is no grant
    assert answer.status == 400 and answer.json()["error"] == "invalid_grant", answer.text
    assert ok(api.call("GET", f"/minds/{team.mind.id}/grants", token=team.mind.jwt))["grants"] == []


def test_a_member_who_leaves_ends_their_credentials_too(api: Api) -> None:
    team = shared(api)
    left = api.call("DELETE", f"/minds/{team.mind.id}/members/alice", token=team.second.jwt)
    assert left.status == 204, left.text
    assert_error(recall(api, team.second.key), 401)
    assert audit(api, team, "key.revoked")[0]["reason"] == "member_left"


def test_ownership_transferred_away_ends_the_previous_owners_credentials(api: Api) -> None:
    team = shared(api)
    answer = api.call(
        "POST",
        f"/minds/{team.mind.id}/transfer",
        token=team.second.jwt,
        json_body={"user_id": "creator", "keep_role": "editor"},
    )
    assert answer.status == 200, answer.text
    assert_error(recall(api, team.second.key), 401)
    assert audit(api, team, "key.revoked")[0]["reason"] == "member_demoted"


def test_an_owner_holding_more_than_one_transaction_takes_loses_all_of_it(api: Api) -> None:
    # Given alice holds 19 keys more (20 with the first), 20 hooks, 3 grants and 5 invitations: more
    # revocations than one DynamoDB transaction holds (100 actions)
    team = shared(api)
    keys = [team.second.key]
    for n in range(18):  # the mind holds 20 keys: the creator's first one, and alice's 19
        made = api.call(
            "POST", f"/minds/{team.mind.id}/keys", token=team.second.jwt, json_body={"label": f"k{n}"}
        )
        keys.append(ok(made, 201)["key"])
    hooks = [create_hook(api, team.second, label=f"h{n}") for n in range(20)]
    flow = Flow(api)
    grants = [flow.tokens(team.second) for _ in range(3)]
    invitations = [invitation_token(api, team.second, role="viewer", user_id=f"guest-{n}") for n in range(5)]
    # When she is removed
    remove(api, team)
    # Then every one of them is refused and audited, and what the creator holds works
    assert all(recall(api, key).status == 401 for key in keys)
    assert all(deliver(api, hook, memory_body()).status == 401 for hook in hooks)
    assert all(mcp(api, grant["access_token"]).status == 401 for grant in grants)
    assert all(accept(api, token, jwt_for(f"guest-{n}")).status == 404 for n, token in enumerate(invitations))
    assert len(audit(api, team, "key.revoked")) == 19
    assert len(audit(api, team, "hook.revoked")) == 20
    assert len(audit(api, team, "grant.revoked")) == 3
    assert len(audit(api, team, "invitation.revoked")) == 5
    assert recall(api, team.mind.key).status == 200
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/keys", token=team.mind.jwt))["keys"]
    assert [key["id"] for key in listed] == [team.mind.key_id]
    # And the mind's counts let the creator make as many keys and hooks again
    assert api.call("POST", f"/minds/{team.mind.id}/keys", token=team.mind.jwt, json_body={}).status == 201
    assert api.call("POST", f"/minds/{team.mind.id}/hooks", token=team.mind.jwt, json_body={}).status == 201


def _team_view(team: Shared) -> Team:
    """`tests.support.teams.role_of` reads the members list with the creator's JWT."""
    return Team(team.mind)


# ---------------------------------------------------------------- races


def transaction_keys(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(operation, sort key) of each action of a TransactWriteItems call's parameters."""
    actions = [next(iter(op.items())) for op in params.get("TransactItems", [])]
    return [(name, (body.get("Item") or body.get("Key"))["sk"]["S"]) for name, body in actions]


def test_a_key_created_while_its_creator_is_being_removed_is_revoked_too(api: Api) -> None:
    # Given alice creates a key in the moment between her removal's read and its commit
    team = shared(api)
    made: list[dict[str, Any]] = []

    def create_first(params: dict[str, Any], model: Any, **_: Any) -> None:
        removing = ("Delete", "MEMBER#alice") in transaction_keys(params)
        if model.name == "TransactWriteItems" and removing and not made:
            made.append(minds.create_key("alice", team.mind.id, "just now"))

    with dynamodb_hook("before-parameter-build.dynamodb", create_first):
        remove(api, team)
    # Then that key is refused and revoked like the others
    assert made and recall(api, made[0]["key"]).status == 401
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/keys", token=team.mind.jwt))["keys"]
    assert [key["id"] for key in listed] == [team.mind.key_id]
    assert {event["key_id"] for event in audit(api, team, "key.revoked")} == {
        team.second.key_id,
        made[0]["id"],
    }


def test_a_key_whose_creator_is_removed_before_it_commits_is_not_created(api: Api) -> None:
    # Given alice's removal commits after her request to create a key was let in, before it commits
    team = shared(api)
    done: list[bool] = []

    def remove_first(params: dict[str, Any], model: Any, **_: Any) -> None:
        creating = any(name == "Put" and sk.startswith("KEY#") for name, sk in transaction_keys(params))
        if model.name == "TransactWriteItems" and creating and not done:
            done.append(True)
            members.remove("creator", "owner", team.mind.id, "alice")

    with dynamodb_hook("before-parameter-build.dynamodb", remove_first):
        answer = api.call(
            "POST", f"/minds/{team.mind.id}/keys", token=team.second.jwt, json_body={"label": "late"}
        )
    # Then the key is refused (409) and none of alice's is left
    assert done and answer.status == 409, answer.text
    listed = ok(api.call("GET", f"/minds/{team.mind.id}/keys", token=team.mind.jwt))["keys"]
    assert [key["id"] for key in listed] == [team.mind.key_id]


def test_an_owner_promoted_back_does_not_revive_what_they_held(api: Api, dynamo: Any) -> None:
    # Given alice's key survived her demotion unrevoked (as a sweep cut short would leave it)
    team = shared(api)
    kept = dynamo.get_item(
        TableName=tables.minds_table(),
        Key=tables.dump(tables.mind_key_item_key(team.mind.id, team.second.key_id)),
    )["Item"]
    lookup = dynamo.get_item(
        TableName=tables.minds_table(), Key=tables.dump(tables.key_hash_key(kept["hash"]["S"]))
    )
    demote(api, team)
    dynamo.put_item(TableName=tables.minds_table(), Item=lookup["Item"])
    # When she is made owner again
    demote(api, team, "owner")
    # Then the key made in her earlier tenure stays refused
    assert_error(recall(api, team.second.key), 401)


# ---------------------------------------------------------------- item 7: email matches are exact


def test_a_kelvin_sign_does_not_stand_for_a_k(api: Api) -> None:
    # Given an invitation for kate@example.com
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="owner", email="kate@example.com")
    # When a token whose verified email starts with U+212A KELVIN SIGN accepts it
    lookalike = jwt_for("mallory", email="\u212aate@example.com", email_verified=True)
    # Then it is another address
    assert assert_error(accept(api, token, lookalike), 403)["details"] == [{"reason": "email_mismatch"}]
    # And kate herself, in any ASCII case, joins
    assert accept(api, token, jwt_for("kate", email="Kate@EXAMPLE.com", email_verified=True)).status == 200


def test_an_invitation_for_a_kelvin_sign_address_is_not_one_for_a_k(api: Api) -> None:
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="viewer", email="\u212aate@example.com")
    kate = jwt_for("kate", email="kate@example.com", email_verified=True)
    assert assert_error(accept(api, token, kate), 403)["details"] == [{"reason": "email_mismatch"}]


@pytest.mark.parametrize("verified", [1, 1.0, "1", "yes", "True", "TRUE", [True], {"v": True}])
def test_email_verified_is_only_true_or_the_string_true(api: Api, verified: Any) -> None:
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="viewer", email="sam@example.com")
    sam = jwt_for("sam", email="sam@example.com", email_verified=verified)
    assert assert_error(accept(api, token, sam), 403)["details"] == [{"reason": "email_unverified"}]
