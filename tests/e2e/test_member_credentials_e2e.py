"""Removal ends what the member held (issue 32 item 2), against the runner's DynamoDB Local: an owner
who holds more than one transaction takes (100 actions) is removed, and every key, hook and
invitation they made stops working, each revocation audited; DynamoDB's own rules on transactions
(size, one action per item) hold for the change and its sweep."""

from __future__ import annotations

import json
import time

from synapse.core.settings import DEV_JWT_SECRET
from synapse.webhooks import signing

from tests.e2e.conftest import Http
from tests.support.api import jwt_for, memory_body


def jwt(sub: str) -> str:
    return jwt_for(sub, secret=DEV_JWT_SECRET)


def test_an_owner_removed_with_more_than_a_transaction_holds_loses_all_of_it(http: Http) -> None:
    # Given alice, an owner of the creator's mind, holds 19 keys, 20 hooks and 3 invitations
    creator, alice = jwt("e2e-creator"), jwt("e2e-alice")
    mind = http.create_mind(creator, "Shared")
    invited = http.call(
        "POST",
        f"/minds/{mind.id}/invitations",
        token=creator,
        json_body={"role": "owner", "user_id": "e2e-alice"},
    )
    assert invited.status_code == 201, invited.text
    joined = http.call(
        "POST", "/invitations/accept", token=alice, json_body={"token": invited.json()["token"]}
    )
    assert joined.status_code == 200, joined.text
    keys = [
        http.call("POST", f"/minds/{mind.id}/keys", token=alice, json_body={"label": f"k{n}"}).json()["key"]
        for n in range(19)
    ]
    hooks = [
        http.call("POST", f"/minds/{mind.id}/hooks", token=alice, json_body={}).json() for _ in range(20)
    ]
    tokens = [
        http.call(
            "POST",
            f"/minds/{mind.id}/invitations",
            token=alice,
            json_body={"role": "owner", "user_id": f"e2e-guest-{n}"},
        ).json()["token"]
        for n in range(3)
    ]
    assert http.call("GET", "/memory/recall", token=keys[0]).status_code == 200
    # When the creator removes her
    removed = http.call("DELETE", f"/minds/{mind.id}/members/e2e-alice", token=creator)
    assert removed.status_code == 204, removed.text
    # Then none of it works, and each revocation is audited
    assert {http.call("GET", "/memory/recall", token=key).status_code for key in keys} == {401}
    body = json.dumps(memory_body()).encode()
    delivered = {
        http.call(
            "POST",
            f"/hooks/{hook['id']}",
            data=body,
            headers={
                "content-type": "application/json",
                signing.HEADER: signing.header_value([hook["secret"]], body, int(time.time())),
            },
        ).status_code
        for hook in hooks
    }
    assert delivered == {401}
    accepted = {
        http.call(
            "POST", "/invitations/accept", token=jwt(f"e2e-guest-{n}"), json_body={"token": token}
        ).status_code
        for n, token in enumerate(tokens)
    }
    assert accepted == {404}
    events = http.call("GET", f"/minds/{mind.id}/audit", token=creator, params={"limit": 100}).json()[
        "events"
    ]
    revoked = [event["action"] for event in events if event["target"].get("reason") == "member_removed"]
    assert sorted(revoked) == sorted(
        ["key.revoked"] * 19 + ["hook.revoked"] * 20 + ["invitation.revoked"] * 3
    )
    # And the creator's own key still works
    assert http.call("GET", "/memory/recall", token=mind.key).status_code == 200
