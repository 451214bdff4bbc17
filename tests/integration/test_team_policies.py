"""The members and invitations functions serve their sample events (events/) with real ids, using
only what their policies in template.yaml grant (moto checks no IAM), as test_template does for the
others."""

from __future__ import annotations

from typing import Any

import pytest

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.integration.test_template import _dynamodb_calls, _not_granted, _seed
from tests.support import events
from tests.support.api import Api
from tests.support.teams import invitation_token, join

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EXPECTED = {
    "list_members": 200,
    "update_member": 200,
    "remove_member": 204,
    "transfer_ownership": 200,
    "create_invitation": 201,
    "list_invitations": 200,
    "revoke_invitation": 204,
    "answer_invitation": 200,
    "answer_invitation_preview": 200,
    "answer_invitation_decline": 204,
}


def _world(api: Api) -> dict[str, str]:
    """The samples' mind, owned by their user, with a member and a pending invitation; and another
    person's mind that invites the samples' user (what the accept, preview and decline samples use)."""
    ids = _seed(api).replacements
    mind = api.create_mind(user="owner-elsewhere", name="Elsewhere")
    own = events.EXAMPLE_MIND_ID
    handle = type(mind)(
        ids[own], ids[events.EXAMPLE_JWT], ids[events.EXAMPLE_MIND_KEY], ids[events.EXAMPLE_KEY_ID]
    )
    join(api, handle, events.EXAMPLE_MEMBER, "editor")
    pending = api.call(
        "POST",
        f"/minds/{handle.id}/invitations",
        token=handle.jwt,
        json_body={"role": "viewer", "user_id": "later"},
    )
    assert pending.status == 201, pending.text
    token = invitation_token(api, mind, role="viewer", user_id=events.EXAMPLE_USER)
    return {
        **ids,
        events.EXAMPLE_INVITATION_ID: pending.json()["invitation"]["id"],
        events.EXAMPLE_INVITATION_TOKEN: token,
    }


def _function_of(name: str) -> template.Route:
    code = "answer_invitation" if name.startswith("answer_invitation") else name
    return next(r for r in template.routes() if r.code_dir.name == code)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_team_sample_is_served_within_its_policy(api: Api, name: str) -> None:
    # Given the sample event, its placeholders filled with real ids and a real invitation token
    event = events.fill(events.load(name), _world(api))
    # When its function answers it
    route = _function_of(name)
    with _dynamodb_calls() as needs:
        result: dict[str, Any] = load_handler(route.code_dir, route.handler)(
            event, LambdaContext(route.function)
        )
    # Then it succeeds, and every DynamoDB call (and secret) it needed is granted by its policy
    assert result["statusCode"] == EXPECTED[name], result["body"]
    assert needs, "the sample reached DynamoDB"
    assert _not_granted(route.function, needs) == [], f"{route.function}'s policy lacks these"
