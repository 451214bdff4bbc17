"""Races of shared minds (issue 25), threads against moto as the key-limit races are: counts inside
the transactions hold the limits and the last owner, and an invitation joins once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from synapse.storage import tables

from tests.support.api import Api, jwt_for
from tests.support.checks import assert_error
from tests.support.races import race
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MINDS, scan
from tests.support.teams import accept, invitation_token, invite, join, role_of, team

PARALLEL = 30
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def pending_invitations(dynamo: Any, mind_id: str) -> list[dict[str, Any]]:
    return [i for i in scan(dynamo, MINDS) if i["pk"] == f"MIND#{mind_id}" and i["sk"].startswith("INVITE#")]


def mind_item(mind_id: str) -> dict[str, Any]:
    found = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    assert found is not None
    return found


def test_30_parallel_invitations_end_with_exactly_the_pending_limit(
    api: Api, dynamo: Any, configure: Configure
) -> None:
    # Given a mind that may have 5 invitations pending
    configure(SYNAPSE_MAX_PENDING_INVITATIONS="5")
    mind = api.create_mind(user="owner-1")
    # When its owner sends 30 at the same moment
    answers = race(PARALLEL, lambda i: invite(api, mind, role="viewer", user_id=f"guest-{i}"))
    # Then exactly 5 are made and the others are 409 limit_reached
    statuses = Counter(a.status for a in answers)
    assert statuses == {201: 5, 409: PARALLEL - 5}, statuses
    assert {a.json()["error"]["code"] for a in answers if a.status == 409} == {"limit_reached"}
    # And the mind holds exactly 5, counted 5
    assert len(pending_invitations(dynamo, mind.id)) == 5
    assert mind_item(mind.id)["invitation_count"] == 5


def test_30_parallel_accepts_end_with_exactly_the_member_limit(
    api: Api, dynamo: Any, configure: Configure
) -> None:
    # Given a mind that may have 4 members (its owner one of them) and 30 pending invitations
    configure(SYNAPSE_MAX_MEMBERS_PER_MIND="4", SYNAPSE_MAX_PENDING_INVITATIONS="30")
    mind = api.create_mind(user="owner-1")
    tokens = [invitation_token(api, mind, role="editor", user_id=f"guest-{i}") for i in range(PARALLEL)]
    # When the 30 invited people accept at the same moment
    answers = race(PARALLEL, lambda i: accept(api, tokens[i], jwt_for(f"guest-{i}")))
    # Then exactly 3 join; the others are told the mind is full, and their invitations stay pending
    statuses = Counter(a.status for a in answers)
    assert statuses == {200: 3, 409: PARALLEL - 3}, statuses
    item = mind_item(mind.id)
    assert (item["member_count"], item["invitation_count"]) == (4, PARALLEL - 3)
    members = [i for i in scan(dynamo, MINDS) if i["sk"].startswith("MEMBER#")]
    assert len(members) == 4


def test_two_owners_demoting_each_other_at_once_leave_one_owner(api: Api) -> None:
    # Given a mind with two owners
    world = team(api)
    second = join(api, world.mind, "owner-2", "owner")
    tokens = {"owner-1": world.mind.jwt, "owner-2": second}
    other = {"owner-1": "owner-2", "owner-2": "owner-1"}

    # When each demotes the other at the same moment, many times over
    def demote(i: int) -> int:
        actor = ("owner-1", "owner-2")[i % 2]
        answer = api.call(
            "PATCH",
            f"/minds/{world.mind.id}/members/{other[actor]}",
            token=tokens[actor],
            json_body={"role": "viewer"},
        )
        return answer.status

    statuses = race(2, demote)
    # Then at most one demotion went through, and the mind keeps an owner
    assert sorted(statuses).count(200) <= 1, statuses
    owners = [user for user in ("owner-1", "owner-2") if role_of(api, world, user) == "owner"]
    assert len(owners) >= 1
    assert mind_item(world.mind.id)["owner_count"] == len(owners)


def test_the_last_owner_can_neither_leave_nor_be_demoted(api: Api) -> None:
    # Given a mind with one owner
    world = team(api)
    members = f"/minds/{world.mind.id}/members/owner-1"
    # When they demote themselves, or leave
    demoted = api.call("PATCH", members, token=world.mind.jwt, json_body={"role": "reviewer"})
    left = api.call("DELETE", members, token=world.mind.jwt)
    # Then both are 409 last_owner, and they are still the owner
    assert assert_error(demoted, 409)["code"] == "last_owner"
    assert assert_error(left, 409)["code"] == "last_owner"
    assert role_of(api, world, "owner-1") == "owner"


def test_an_invitation_accepted_in_parallel_joins_once(api: Api, dynamo: Any) -> None:
    # Given one invitation
    mind = api.create_mind(user="owner-1")
    token = invitation_token(api, mind, role="editor", user_id="guest-1")
    jwt = jwt_for("guest-1")
    # When it is accepted 10 times at once
    answers = race(10, lambda _: accept(api, token, jwt))
    # Then one acceptance joins, the others find it used (404) or the person already in (409)
    statuses = Counter(a.status for a in answers)
    assert statuses[200] == 1 and set(statuses) <= {200, 404, 409}, statuses
    item = mind_item(mind.id)
    assert (item["member_count"], item["invitation_count"]) == (2, 0)
    # And accepted again later it is a 404
    assert_error(accept(api, token, jwt), 404)


def test_an_invitation_revoked_while_it_is_accepted_either_joins_or_is_refused(api: Api, dynamo: Any) -> None:
    # Given an invitation, revoked by its owner at the moment the invited person accepts it
    for attempt in range(5):
        mind = api.create_mind(user=f"owner-{attempt}")
        made = invite(api, mind, role="viewer", user_id="guest").json()
        revoke_path = f"/minds/{mind.id}/invitations/{made['invitation']['id']}"

        def act(i: int, mind: Any = mind, made: Any = made, path: str = revoke_path) -> int:
            if i == 0:
                return api.call("DELETE", path, token=mind.jwt).status
            return accept(api, made["token"], jwt_for("guest")).status

        revoked, accepted = race(2, act)
        # Then exactly one of them took the invitation: a join and a 404 revoke, or a revoke and a
        # refused accept; never both, and the counts agree
        assert sorted([revoked, accepted]) in ([200, 404], [204, 404]), (revoked, accepted)
        item = mind_item(mind.id)
        assert item["invitation_count"] == 0
        assert item["member_count"] == (2 if accepted == 200 else 1)
