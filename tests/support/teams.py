"""Builders for shared minds (issue 25): a mind with a member of every role, joined through the API
(an owner's invitation by user id, accepted with the member's own JWT)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle, jwt_for

ROLES = ("viewer", "editor", "reviewer", "owner")  # lowest first


@dataclass
class Team:
    """A mind, its owner's handle, and a JWT per member by role (plus anyone else who joined)."""

    mind: MindHandle
    tokens: dict[str, str] = field(default_factory=dict)  # role or name → JWT
    users: dict[str, str] = field(default_factory=dict)  # role or name → sub

    def as_member(self, who: str) -> dict[str, Any]:
        """Call keyword arguments for a member addressing the mind with X-Mind-Id."""
        return {"token": self.tokens[who], "headers": {"X-Mind-Id": self.mind.id}}


def invite(api: Api, mind: MindHandle, token: str | None = None, **body: Any) -> HttpResponse:
    return api.call("POST", f"/minds/{mind.id}/invitations", token=token or mind.jwt, json_body=body)


def invitation_token(api: Api, mind: MindHandle, **body: Any) -> str:
    answer = invite(api, mind, **body)
    assert answer.status == 201, answer.text
    return str(answer.json()["token"])


def accept(api: Api, token: str, jwt: str) -> HttpResponse:
    return api.call("POST", "/invitations/accept", token=jwt, json_body={"token": token})


def join(api: Api, mind: MindHandle, user: str, role: str) -> str:
    """`user` joins `mind` with `role` (invited by user id); their JWT."""
    jwt = jwt_for(user)
    accepted = accept(api, invitation_token(api, mind, role=role, user_id=user), jwt)
    assert accepted.status == 200, accepted.text
    return jwt


def team(api: Api, owner: str = "owner-1", name: str = "Team Mind") -> Team:
    """A mind whose creator is its owner, with a viewer, an editor and a reviewer who joined it."""
    mind = api.create_mind(user=owner, name=name)
    built = Team(mind, {"owner": mind.jwt}, {"owner": owner})
    for role in ("viewer", "editor", "reviewer"):
        user = f"{role}-1"
        built.tokens[role], built.users[role] = join(api, mind, user, role), user
    return built


def role_of(api: Api, team: Team, user: str) -> str | None:
    """The member's role as the members list shows it (None: not a member)."""
    listed = api.call("GET", f"/minds/{team.mind.id}/members", token=team.mind.jwt)
    assert listed.status == 200, listed.text
    return next((m["role"] for m in listed.json()["members"] if m["user_id"] == user), None)
