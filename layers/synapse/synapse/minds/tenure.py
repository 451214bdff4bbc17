"""What a member's credentials hang on: the tenure of their role.

Every member item carries `tenure`, an id that is new when they join and at every change of their
role. What a member creates with the owner role (CREATING_ROLE: the role ROUTE_ROLES asks to create
a Mind Key, an inbound hook or an invitation, and OAuth consent asks to approve an app) records who
created it (`created_by`; an invitation's `invited_by`, a grant's `user_id`) and the tenure it was
created under (`tenure`), in a transaction that holds to that tenure (`hold`): nothing is created by
someone who stopped being an owner while the request ran.

Every door checks it again on use (`holds`): the authorizer for a Mind Key or an access token, a
hook's delivery, an invitation's accept, a code's exchange and a grant's refresh. So a credential
whose creator was removed or demoted is refused on its next use, whether or not its revocation
(`holdings`) is written yet, and a creator promoted back does not revive it: the tenure is new.

Credentials from before creators were recorded carry no `created_by`: they belong to the mind, not to
a member, and neither a door nor a removal ends them with anyone (docs/auth.md). A credential that
records its creator but no tenure (made by a member from before tenures, or on a mind from before
members) holds while its creator is an owner.

This module reads only the Minds table, so the authorizer and the key module may use it.
"""

from typing import Any, NamedTuple

from synapse.core.errors import Conflict
from synapse.core.ids import new_id
from synapse.storage import tables

CREATING_ROLE = "owner"  # teams.roles.OWNER (a unit test keeps them equal, and ROUTE_ROLES with them)
MEMBER_PREFIX = "MEMBER#"


def member_key(mind_id: str, user_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{MEMBER_PREFIX}{user_id}"}


def new() -> str:
    return new_id("ten_")


class Hold(NamedTuple):
    """What a new credential records of its creator, and the transaction operation (None for a mind
    from before members) that commits it only while the creator is an owner in that tenure."""

    recorded: dict[str, Any]
    operation: dict[str, Any] | None


def _check(mind_id: str, user_id: str, tenure: str | None) -> dict[str, Any]:
    condition = "#role = :role" + (" AND tenure = :tenure" if tenure else "")
    values = {"role": CREATING_ROLE, **({"tenure": tenure} if tenure else {})}
    return {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(member_key(mind_id, user_id)),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": tables.values(**values),
        }
    }


def hold(mind_id: str, user_id: str) -> Hold:
    """The creator's hold for a credential `user_id` creates now (their role is checked already).
    A member from before tenures is given one by the same transaction."""
    member = tables.get(tables.minds_table(), member_key(mind_id, user_id))
    if member is None:  # a mind from before members: its `owner` (`holds` checks it on use)
        return Hold({"created_by": user_id}, None)
    if member.get("tenure"):
        recorded = {"created_by": user_id, "tenure": member["tenure"]}
        return Hold(recorded, _check(mind_id, user_id, member["tenure"]))
    tenure = new()
    start = {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(member_key(mind_id, user_id)),
            "UpdateExpression": "SET tenure = :tenure",
            "ConditionExpression": "#role = :role AND attribute_not_exists(tenure)",
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": tables.values(role=CREATING_ROLE, tenure=tenure),
        }
    }
    return Hold({"created_by": user_id, "tenure": tenure}, start)


def lost() -> Conflict:
    """A creation refused by its `hold`: the creator's role changed while it was written."""
    return Conflict("Your role on this mind changed while we wrote; look again and send the request again.")


def still(mind_id: str, created_by: str | None, tenure: str | None) -> list[dict[str, Any]]:
    """The transaction operation that commits only while the creator still holds what they created
    under (a code's exchange, a grant's refresh, an invitation's accept), after `holds` said so: none
    for what records no creator, or no tenure on a mind from before members."""
    if not created_by:
        return []
    if not tenure and tables.get(tables.minds_table(), member_key(mind_id, created_by)) is None:
        return []
    return [_check(mind_id, created_by, tenure)]


def held(member: dict[str, Any] | None, tenure: str | None) -> bool:
    """Whether a credential made under `tenure` still holds for its creator's member item as read."""
    if member is None:
        return False
    if tenure:
        return member.get("tenure") == tenure
    return member.get("role") == CREATING_ROLE


def holds(mind_id: str, created_by: str | None, tenure: str | None) -> bool:
    """Whether a credential's creator still holds it: one GetItem of their member item (a second, of
    the mind, only for a credential with no tenure whose creator has no member item)."""
    if not created_by:
        return True  # from before creators were recorded: the mind's (docs/auth.md)
    member = tables.get(tables.minds_table(), member_key(mind_id, created_by))
    if member is not None or tenure:
        return held(member, tenure)
    mind = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    return mind is not None and "owner_count" not in mind and mind.get("owner") == created_by
