"""What a member's credentials hang on (`teams.tenure`): the role they are created with is the one the
routes that create them ask for, and a credential holds only in the tenure it was made in."""

from __future__ import annotations

import pytest
from synapse.api.routes import ROUTE_ROLES
from synapse.teams import roles, tenure


@pytest.mark.parametrize(
    "route",
    ["POST /minds/{mind_id}/keys", "POST /minds/{mind_id}/hooks", "POST /minds/{mind_id}/invitations"],
)
def test_credentials_are_created_with_the_role_the_routes_ask_for(route: str) -> None:
    assert tenure.CREATING_ROLE == roles.OWNER == ROUTE_ROLES[route]


def test_a_credential_holds_only_in_its_creators_tenure() -> None:
    member = {"role": "owner", "tenure": "ten_a"}
    assert tenure.held(member, "ten_a")
    assert not tenure.held({**member, "tenure": "ten_b"}, "ten_a")  # demoted (and promoted back)
    assert not tenure.held(None, "ten_a")  # removed


def test_a_credential_without_a_tenure_holds_while_its_creator_is_an_owner() -> None:
    assert tenure.held({"role": "owner"}, None)
    assert not tenure.held({"role": "editor", "tenure": "ten_a"}, None)
