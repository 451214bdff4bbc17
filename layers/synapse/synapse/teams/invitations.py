"""Invitations to a mind: an owner invites a person by email or by user id with a role; the person
accepts (or declines) with their own JWT and the one-time token of the invitation's link.

The token is shown once; only its keyed hash is stored, under a lookup item (`INVITEHASH#<hmac>`),
as Mind Keys are. An invitation lasts 7 days. Accepting deletes the invitation and its lookup and
puts the member in one transaction, conditioned on the invitation still being there, so a token
accepted twice (or twice at once) joins once. Pending invitations are counted on the mind
(`counts`); expired ones are reaped when the mind is full of them or they are listed.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any, Protocol

from synapse.core import clock
from synapse.core.errors import Conflict, Forbidden, LimitReached, NotFound, SynapseError, Unprocessable
from synapse.core.ids import looks_like_id, new_id
from synapse.core.settings import get_settings
from synapse.memory import event_names
from synapse.minds import minds
from synapse.storage import pages, tables
from synapse.teams import counts, events, members, roles, tenure
from synapse.teams.items import (
    INVITE_PREFIX,
    delete_invitation,
    invitation_key,
    invitation_lookup_key,
    materialise,
    member_item,
    put_new,
)

PREFIX = INVITE_PREFIX
TOKEN_PREFIX = "minv_"  # noqa: S105 (a prefix, not a secret)
LIFETIME = timedelta(days=7)
EMAIL_MAX_CHARS = 254
ACCEPT_PATH = "/console#/accept?token="


class Person(Protocol):
    """Who accepts or declines (an `auth.principal.Principal`): their JWT's sub and email claims."""

    @property
    def user_id(self) -> str | None: ...
    @property
    def email(self) -> str | None: ...
    @property
    def email_verified(self) -> bool: ...


class Expired(SynapseError):
    status, code = 410, "invitation_expired"


class AlreadyMember(Conflict):
    code = "already_member"


def _hash(token: str) -> str:
    """HMAC-SHA256 under the pepper, apart from Mind Keys' (`invitation:`)."""
    return hmac.new(get_settings().key_pepper, b"invitation:" + token.encode(), hashlib.sha256).hexdigest()


def public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "role": item["role"],
        "email": item.get("email"),
        "user_id": item.get("user_id"),
        "created_at": item["created_at"],
        "expires_at": item["expires_at"],
        "invited_by": item["invited_by"],
        "status": "pending",
    }


def _invitee(body: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """The body's role and whom it invites: exactly one of `email` and `user_id`."""
    role, email, user_id = body.get("role"), body.get("email"), body.get("user_id")
    if role not in roles.ROLES:
        raise Unprocessable(
            f"role: must be one of {', '.join(roles.ROLES)}.", details=[{"field": "role", "rule": "enum"}]
        )
    if (email is None) == (user_id is None):
        raise Unprocessable(
            "Invite by email or by user_id: give exactly one.", details=[{"field": "email", "rule": "one_of"}]
        )
    if email is not None and not (
        isinstance(email, str) and 3 <= len(email.strip()) <= EMAIL_MAX_CHARS and "@" in email.strip()[1:-1]
    ):
        raise Unprocessable("email: must be an email address.", details=[{"field": "email", "rule": "email"}])
    if user_id is not None and not (
        isinstance(user_id, str) and 1 <= len(user_id) <= members.USER_ID_MAX_CHARS
    ):
        raise Unprocessable(
            f"user_id: must be a user id of 1-{members.USER_ID_MAX_CHARS} characters.",
            details=[{"field": "user_id", "rule": "length"}],
        )
    return str(role), same_address(email) if email else None, user_id


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def same_address(email: str) -> str:
    """An email address as invitations compare it: trimmed and ASCII letters lowercased, nothing
    else. No Unicode case folding or NFKC: those map other characters onto ASCII letters (U+212A
    KELVIN SIGN lowercases to `k`), so an address that only looks like the invited one would match."""
    return email.strip().translate(_ASCII_LOWER)


def _put_operations(item: dict[str, Any], digest: str) -> list[dict[str, Any]]:
    lookup = {**invitation_lookup_key(digest), "mind_id": item["mind_id"], "invitation_id": item["id"]}
    return [put_new(item), put_new(lookup)]


def create(actor: str, mind_id: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """A new invitation and its one-time token and link (the token shown this once)."""
    role, email, user_id = _invitee(body)
    materialise(mind_id)
    if user_id is not None and members.find(mind_id, user_id) is not None:
        raise AlreadyMember(f"{user_id[:80]!r} is already a member of this mind.")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    digest, moment = _hash(token), clock.now()
    invitation_id = new_id("inv_")
    item = {
        **invitation_key(mind_id, invitation_id),
        "id": invitation_id,
        "mind_id": mind_id,
        "role": role,
        "email": email,
        "user_id": user_id,
        "created_at": clock.to_iso(moment),
        "expires_at": clock.to_iso(moment + LIFETIME),
        "invited_by": actor,
        "hash": digest,
    }
    hold = tenure.hold(mind_id, actor)  # the inviter's tenure as owner: the invitation ends with it
    if "tenure" in hold.recorded:
        item["tenure"] = hold.recorded["tenure"]
    target = {"invitation_id": item["id"], "role": role, "email": email, "user_id": user_id}
    event = events.Announcement(mind_id, event_names.MEMBER_INVITED, actor, target)
    operations = [
        *_put_operations(item, digest),
        *event.operations(),
        *([hold.operation] if hold.operation else []),
    ]
    try:
        counts.commit(mind_id, counts.Delta(invitations=+1), operations, _raced())
    except LimitReached:
        if not reap_expired(mind_id):
            raise
        counts.commit(mind_id, counts.Delta(invitations=+1), operations, _raced())
    return {"invitation": public(item), "token": token, "link": base + ACCEPT_PATH + token}


def _raced() -> Conflict:
    return Conflict("The mind's members changed while we wrote; look again and send the request again.")


def _pending(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=PREFIX),
            ConsistentRead=True,
        )
    )


def reap_expired(mind_id: str) -> int:
    """Delete the mind's expired invitations, counted off; how many went."""
    now, reaped = clock.to_iso(clock.now()), 0
    for item in _pending(mind_id):
        if item["expires_at"] <= now:
            try:
                counts.commit(mind_id, counts.Delta(invitations=-1), delete_invitation(item), _raced())
                reaped += 1
            except Conflict:
                pass  # accepted, revoked or reaped meanwhile
    return reaped


def list_pending(mind_id: str, limit: int, after: str | None) -> pages.Page[dict[str, Any]]:
    """A page of the mind's pending invitations (the expired ones are reaped first)."""
    reap_expired(mind_id)
    page = pages.in_mind(mind_id, PREFIX, limit, after)
    return pages.Page([public(item) for item in page.items], page.next_cursor)


def revoke(actor: str, mind_id: str, invitation_id: str) -> None:
    """An owner withdraws an invitation: its token stops working at once."""
    known = looks_like_id("inv_", invitation_id)
    item = tables.get(tables.minds_table(), invitation_key(mind_id, invitation_id)) if known else None
    if item is None:
        raise NotFound(f"No pending invitation {invitation_id[:80]!r} on this mind.")
    event = events.Announcement(mind_id, event_names.INVITATION_REVOKED, actor, _target(item))
    operations = [*delete_invitation(item), *event.operations()]
    counts.commit(mind_id, counts.Delta(invitations=-1), operations, _used())


def _target(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "invitation_id": item["id"],
        "role": item["role"],
        "email": item.get("email"),
        "user_id": item.get("user_id"),
    }


def _used() -> NotFound:
    return NotFound("No such invitation: it was revoked, declined or used.")


def resolve(token: Any) -> dict[str, Any]:
    """The pending invitation a token opens: 404 unknown or used, 410 expired."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 100:
        raise Unprocessable(
            "token: give the invitation's token.", details=[{"field": "token", "rule": "required"}]
        )
    lookup = tables.get(tables.minds_table(), invitation_lookup_key(_hash(token)))
    item = (
        tables.get(tables.minds_table(), invitation_key(lookup["mind_id"], lookup["invitation_id"]))
        if lookup
        else None
    )
    if item is None:
        raise _used()
    if item["expires_at"] <= clock.to_iso(clock.now()):
        raise Expired("This invitation has expired: ask the mind's owner for a new one.")
    if not tenure.holds(item["mind_id"], item["invited_by"], item.get("tenure")):
        raise _withdrawn()
    return item


def _withdrawn() -> NotFound:
    """An invitation whose inviter was removed or lost the owner role: revoked with their role
    (`holdings`), and refused as a revoked one is, also before its revocation is written."""
    return NotFound(
        "No such invitation: the person who sent it no longer owns the mind, so it was withdrawn."
    )


def check_invitee(item: dict[str, Any], principal: Person) -> None:
    """403 unless the signed-in person is the one invited: their `sub`, or their verified email."""
    if item.get("user_id") is not None:
        if item["user_id"] != principal.user_id:
            raise _not_for_you("user_mismatch", "This invitation is for another user.")
        return
    if not principal.email:
        raise _not_for_you(
            "email_missing", "This invitation is for an email address; your sign-in carries none."
        )
    if not principal.email_verified:
        raise _not_for_you("email_unverified", "Your email is not verified with your identity provider yet.")
    if same_address(principal.email) != item["email"]:
        raise _not_for_you("email_mismatch", "This invitation is for another email address.")


def _not_for_you(reason: str, message: str) -> Forbidden:
    return Forbidden(message, details=[{"reason": reason}])


def preview(token: Any) -> dict[str, Any]:
    """What the invitation offers, without using it."""
    item = resolve(token)
    mind = minds.get_mind(item["mind_id"])
    return {"invitation": public(item), "mind": {"id": mind.id, "name": mind.name}}


def accept(principal: Person, token: Any) -> dict[str, Any]:
    """The invited person joins with the invitation's role; the invitation is used up."""
    item = resolve(token)
    check_invitee(item, principal)
    user_id, mind_id = str(principal.user_id), str(item["mind_id"])
    if roles.role_of(mind_id, user_id) is not None:
        raise AlreadyMember("You are already a member of this mind.")
    now = clock.to_iso(clock.now())
    member = member_item(
        mind_id,
        user_id,
        item["role"],
        principal.email if principal.email_verified else None,
        item["invited_by"],
        now,
    )
    event = events.Announcement(
        mind_id,
        event_names.MEMBER_JOINED,
        user_id,
        {"user_id": user_id, "role": item["role"], "invitation_id": item["id"]},
    )
    inviter = tenure.still(mind_id, item["invited_by"], item.get("tenure"))  # as `resolve` checked
    operations = [*delete_invitation(item), put_new(member), *event.operations(), *inviter]
    delta = counts.Delta(members=+1, owners=int(item["role"] == roles.OWNER), invitations=-1)
    try:
        counts.commit(mind_id, delta, operations, _used())
    except NotFound:
        if not tenure.holds(mind_id, item["invited_by"], item.get("tenure")):
            raise _withdrawn() from None
        raise
    mind = minds.get_mind(mind_id)
    return {"mind": {**mind.public(), "role": item["role"]}, "role": item["role"]}


def decline(principal: Person, token: Any) -> None:
    """The invited person turns it down: the token stops working."""
    item = resolve(token)
    check_invitee(item, principal)
    event = events.Announcement(
        item["mind_id"], event_names.INVITATION_DECLINED, str(principal.user_id), _target(item)
    )
    operations = [*delete_invitation(item), *event.operations()]
    counts.commit(item["mind_id"], counts.Delta(invitations=-1), operations, _used())
