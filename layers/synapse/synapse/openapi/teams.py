"""The OpenAPI operations of members and invitations (docs/auth.md "Members and roles"), merged into
`synapse.openapi.document.OPERATIONS`, with their models: the bodies are described here (pydantic,
as strict as `synapse.teams` is), the handlers validate them in `synapse.teams`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from synapse.openapi.parts import PAGE, Op
from synapse.openapi.schemas import Mind, _Answer
from synapse.teams import members
from synapse.teams.invitations import EMAIL_MAX_CHARS

Role = Literal["viewer", "editor", "reviewer", "owner"]
_USER_ID = Field(min_length=1, max_length=members.USER_ID_MAX_CHARS, description="A person's JWT sub.")


class Member(_Answer):
    user_id: str
    role: Role
    email: str | None = Field(description="Their verified email when they joined, else null.")
    joined_at: str
    invited_by: str | None = Field(description="Who invited them; null for the mind's creator.")


class MemberPage(_Answer):
    members: list[Member]
    next_cursor: str | None


class ChangedMembers(_Answer):
    """The two members a transfer changed: the new owner, then you."""

    members: list[Member]


class Invitation(_Answer):
    id: str = Field(description="inv_…")
    role: Role
    email: str | None
    user_id: str | None
    created_at: str
    expires_at: str = Field(description="7 days after created_at.")
    invited_by: str
    status: Literal["pending"]


class InvitationPage(_Answer):
    invitations: list[Invitation]
    next_cursor: str | None


class NewInvitation(_Answer):
    """An invitation as created: `token` is shown this once; `link` opens the console's accept page."""

    invitation: Invitation
    token: str = Field(description="minv_…: the one-time secret; the server keeps only its keyed hash.")
    link: str = Field(description="<base>/console#/accept?token=<token>")


class MindRef(_Answer):
    id: str
    name: str


class InvitationPreview(_Answer):
    invitation: Invitation
    mind: MindRef


class MindWithRole(Mind):
    role: Role = Field(description="The caller's role on the mind.")


class MindWithRolePage(_Answer):
    minds: list[MindWithRole]
    next_cursor: str | None


class Joined(_Answer):
    mind: MindWithRole
    role: Role


class _Strict(BaseModel):
    model_config = ConfigDict(extra="allow")


class RoleChange(_Strict):
    """The body of `PATCH /minds/{mind_id}/members/{user_id}`."""

    role: Role


class Transfer(_Strict):
    """The body of `POST /minds/{mind_id}/transfer`."""

    user_id: str = _USER_ID
    keep_role: Role = Field(default="reviewer", description="Your role afterwards.")


class InviteByEmail(_Strict):
    role: Role
    email: str = Field(min_length=3, max_length=EMAIL_MAX_CHARS, pattern=".@.")


class InviteByUser(_Strict):
    role: Role
    user_id: str = _USER_ID


def _exactly_one(schema: dict[str, Any]) -> None:
    """Email or user id, never both: `oneOf`, where pydantic writes a union as `anyOf`."""
    schema["oneOf"] = schema.pop("anyOf")


class InvitationCreate(RootModel[InviteByEmail | InviteByUser]):
    """The body of `POST /minds/{mind_id}/invitations`: whom (email or user_id) with which role."""

    model_config = ConfigDict(json_schema_extra=_exactly_one)


class InvitationToken(_Strict):
    """The body of `POST /invitations/preview`, `/accept` and `/decline`."""

    token: str = Field(
        min_length=1, max_length=100, pattern="^minv_", description="minv_…, from the invitation's link."
    )


_NOT_FOR_YOU = (
    "The invitation is for someone else; details name why: email_missing, email_unverified, "
    "email_mismatch or user_mismatch"
)
_UNKNOWN = "No such invitation: unknown, revoked, declined or already used"
_LAST_OWNER = "last_owner: the mind would have no owner left"

OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/minds/{mind_id}/members"): Op(
        "listMembers",
        "The mind's members and their roles (any member)",
        "members",
        "user",
        {200: MemberPage},
        params=PAGE,
    ),
    ("PATCH", "/minds/{mind_id}/members/{user_id}"): Op(
        "updateMember",
        "An owner changes a member's role",
        "members",
        "user",
        {200: Member},
        RoleChange,
        errors=(409,),
        notes={409: _LAST_OWNER},
    ),
    ("DELETE", "/minds/{mind_id}/members/{user_id}"): Op(
        "removeMember",
        "An owner removes a member; a member removes themselves (leaves)",
        "members",
        "user",
        {204: None},
        errors=(409,),
        notes={409: _LAST_OWNER},
    ),
    ("POST", "/minds/{mind_id}/transfer"): Op(
        "transferOwnership",
        "Another member becomes owner and you take keep_role, in one transaction",
        "members",
        "user",
        {200: ChangedMembers},
        Transfer,
        errors=(409,),
        notes={409: "The last owner would be left none, or user_id names you (not_self)"},
    ),
    ("POST", "/minds/{mind_id}/invitations"): Op(
        "createInvitation",
        "Invite a person by email or user id with a role (the token shown once)",
        "members",
        "user",
        {201: NewInvitation},
        InvitationCreate,
        errors=(409,),
        notes={409: "already_member, or limit_reached: as many invitations pending as allowed"},
    ),
    ("GET", "/minds/{mind_id}/invitations"): Op(
        "listInvitations",
        "The mind's pending invitations (no tokens)",
        "members",
        "user",
        {200: InvitationPage},
        params=PAGE,
    ),
    ("DELETE", "/minds/{mind_id}/invitations/{invitation_id}"): Op(
        "revokeInvitation",
        "Withdraw an invitation: its token stops working at once",
        "members",
        "user",
        {204: None},
    ),
    ("POST", "/invitations/preview"): Op(
        "previewInvitation",
        "What an invitation's token offers, without using it",
        "members",
        "user",
        {200: InvitationPreview},
        InvitationToken,
        errors=(404, 410),
        notes={404: _UNKNOWN, 410: "invitation_expired"},
    ),
    ("POST", "/invitations/accept"): Op(
        "acceptInvitation",
        "Join the mind with the invitation's role (once)",
        "members",
        "user",
        {200: Joined},
        InvitationToken,
        errors=(403, 404, 409, 410),
        notes={
            403: _NOT_FOR_YOU,
            404: _UNKNOWN,
            409: "already_member, or limit_reached: the mind is full",
            410: "invitation_expired",
        },
    ),
    ("POST", "/invitations/decline"): Op(
        "declineInvitation",
        "Turn an invitation down: its token stops working",
        "members",
        "user",
        {204: None},
        InvitationToken,
        errors=(403, 404, 410),
        notes={403: _NOT_FOR_YOU, 404: _UNKNOWN, 410: "invitation_expired"},
    ),
}
