"""Roles on a mind and the one lookup every person-facing request makes: the caller's role.

`owner` > `reviewer` > `editor` > `viewer`, each allowed what the ones below it are. A person who is
not a member of a mind is told it does not exist (404), exactly as for a missing mind; a member
without the role a route needs gets a 403 naming the role needed and theirs. Nothing is cached: a
removed member's next request is refused.
"""

from __future__ import annotations

from typing import Any

from synapse.core.errors import Forbidden, NotFound
from synapse.core.ids import looks_like_id
from synapse.minds import minds
from synapse.storage import tables
from synapse.teams.tenure import MEMBER_PREFIX as MEMBER_PREFIX  # where a member item is
from synapse.teams.tenure import member_key as member_key

VIEWER, EDITOR, REVIEWER, OWNER = "viewer", "editor", "reviewer", "owner"
ROLES = (VIEWER, EDITOR, REVIEWER, OWNER)  # lowest first


def rank(role: str) -> int:
    return ROLES.index(role)


def at_least(role: str | None, needed: str) -> bool:
    return role is not None and rank(role) >= rank(needed)


def vouches(role: str | None) -> bool:
    """Whether a person's write in this role is verified: a reviewer's or an owner's is. An editor is
    trusted to write, not to vouch: their writes stay unverified, like an agent's."""
    return at_least(role, REVIEWER)


def materialised(mind_item: dict[str, Any]) -> bool:
    """Whether the mind's members are items (else its `owner` attribute is its one owner)."""
    return "owner_count" in mind_item


def role_of(mind_id: str, user_id: str) -> str | None:
    """The person's role on the mind, None when they are not a member (or there is no such mind).
    One strongly consistent GetItem; a mind from before members needs a second (its item)."""
    if not looks_like_id("m_", mind_id):
        return None
    member = tables.get(tables.minds_table(), member_key(mind_id, user_id))
    if member is not None:
        return str(member["role"])
    mind = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    if mind is not None and not materialised(mind) and minds.same_owner(str(mind.get("owner", "")), user_id):
        return OWNER
    return None


def lacking(needed: str, held: str) -> Forbidden:
    return Forbidden(
        f"This needs the {needed} role or higher on this mind; yours is {held}.",
        details=[{"role": needed}],
    )


def require(mind_id: str, user_id: str, needed: str) -> str:
    """The person's role when it is at least `needed`: 404 for a non-member, 403 for too low a role."""
    role = role_of(mind_id, user_id)
    if role is None:
        raise NotFound(f"No mind {mind_id[:80]!r}.")
    if not at_least(role, needed):
        raise lacking(needed, role)
    return role
