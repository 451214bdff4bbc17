"""The member items themselves, and the materialisation of a mind from before members: apart from
`members` so that every request's role lookup and mind listing (`roles`, `directory`) loads only
these, not what changing membership needs (its events and the webhooks behind them)."""

from __future__ import annotations

from typing import Any

from synapse.core.errors import NotFound
from synapse.storage import tables
from synapse.teams import roles, tenure
from synapse.teams.roles import OWNER, member_key


def member_item(
    mind_id: str,
    user_id: str,
    role: str,
    email: str | None,
    invited_by: str | None,
    at: str,
    started: str | None = None,
) -> dict[str, Any]:
    """A member item; `member` and `joined_at` put it in the GSI that lists a person's minds, and
    `tenure` (`started`, else new) is what their credentials hang on."""
    return {
        **member_key(mind_id, user_id),
        "mind_id": mind_id,
        "user_id": user_id,
        "member": user_id,
        "role": role,
        "email": email,
        "joined_at": at,
        "invited_by": invited_by,
        "tenure": started or tenure.new(),
    }


INVITE_PREFIX = "INVITE#"


def invitation_key(mind_id: str, invitation_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{INVITE_PREFIX}{invitation_id}"}


def invitation_lookup_key(digest: str) -> dict[str, str]:
    return {"pk": f"INVITEHASH#{digest}", "sk": "INVITEHASH"}


def delete_invitation(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Delete the invitation and its lookup, only while the invitation is there."""
    return [
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump({"pk": item["pk"], "sk": item["sk"]}),
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(invitation_lookup_key(item["hash"])),
            }
        },
    ]


def put_new(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def materialise(mind_id: str) -> dict[str, Any]:
    """The mind item with its members as items: for a mind from before members, its `owner`
    becomes its one owner member (joined when the mind was created), counts and all, once."""
    mind = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    if mind is None:
        raise NotFound(f"No mind {mind_id!r}.")
    if roles.materialised(mind):
        return mind
    mark = {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "UpdateExpression": "SET member_count = :one, owner_count = :one, invitation_count = :zero",
            "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(owner_count)",
            "ExpressionAttributeValues": tables.values(one=1, zero=0),
        }
    }
    owner = member_item(mind_id, str(mind["owner"]), OWNER, None, None, str(mind["created_at"]))
    try:
        tables.transact([mark, put_new(owner)])
    except tables.client().exceptions.TransactionCanceledException:
        pass  # materialised meanwhile (or deleted: the next read says so)
    return materialise(mind_id)
