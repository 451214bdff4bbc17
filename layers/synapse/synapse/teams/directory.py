"""The minds a person is a member of, with their role: `GET /minds`, and the one mind a request
means when it names none (`X-Mind-Id` left out).

The GSI `member` (member = sub, joined_at) holds one item per membership, oldest joined first. A
person who owned minds from before members existed has them materialised on their first
`GET /minds` (once: the flag `memberships` on their `USER#<sub>` / `MINDS` item says it is done);
until then `only_mind` also reads the `owner` index, so nothing is missed meanwhile.
"""

from typing import Any, NamedTuple

from synapse.core.ids import looks_like_id
from synapse.minds import minds
from synapse.storage import batch_reads, pages, tables
from synapse.teams import items, roles

INDEX = "member"


class Membership(NamedTuple):
    mind: minds.Mind
    role: str

    def public(self) -> dict[str, Any]:
        return {**self.mind.public(), "role": self.role}


def _member_query(user_id: str) -> dict[str, Any]:
    return {
        "TableName": tables.minds_table(),
        "IndexName": INDEX,
        "KeyConditionExpression": "#member = :member",
        "ExpressionAttributeNames": {"#member": "member"},
        "ExpressionAttributeValues": tables.values(member=user_id),
    }


def _owner_query(user_id: str) -> dict[str, Any]:
    return {
        "TableName": tables.minds_table(),
        "IndexName": "owner",
        "KeyConditionExpression": "#owner = :owner",
        "ExpressionAttributeNames": {"#owner": "owner"},
        "ExpressionAttributeValues": tables.values(owner=user_id),
    }


def _user_key(user_id: str) -> dict[str, str]:
    return {"pk": f"USER#{user_id}", "sk": "MINDS"}


def materialise_owned(user_id: str) -> None:
    """Once per person: the minds they own from before members get their member items."""
    user = tables.get(tables.minds_table(), _user_key(user_id))
    if user is not None and user.get("memberships"):
        return
    for item in tables.query_all(**_owner_query(user_id)):
        if not roles.materialised(item):
            items.materialise(str(item["id"]))
    tables.client().update_item(
        TableName=tables.minds_table(),
        Key=tables.dump(_user_key(user_id)),
        UpdateExpression="SET memberships = :yes",
        ExpressionAttributeValues=tables.values(yes=True),
    )


def _memberships(member_items: list[dict[str, Any]]) -> list[Membership]:
    """The minds of these member items (one BatchGetItem), skipping any deleted meanwhile."""
    keys = [(str(item["pk"]), "MIND") for item in member_items]
    found = batch_reads.batch_get(tables.minds_table(), keys)
    return [
        Membership(minds.mind_from_item(found[(str(item["pk"]), "MIND")]), str(item["role"]))
        for item in member_items
        if (str(item["pk"]), "MIND") in found
    ]


def _after(user_id: str) -> pages.Position:
    """A cursor names the last membership shown (its mind and when it was joined); the index's start
    key is rebuilt from them."""

    def start_key(position: dict[str, Any]) -> dict[str, str] | None:
        mind_id, joined_at = position["mind_id"], position["joined_at"]
        if not (isinstance(mind_id, str) and looks_like_id("m_", mind_id) and minds.is_timestamp(joined_at)):
            return None
        return {**roles.member_key(mind_id, user_id), "member": user_id, "joined_at": joined_at}

    return pages.Position(("mind_id", "joined_at"), start_key)


def list_minds(user_id: str, limit: int, after: str | None) -> pages.Page[Membership]:
    """The person's minds with their role, oldest joined first, a page at a time."""
    materialise_owned(user_id)
    page = pages.read(_member_query(user_id), f"user:{user_id}", "memberships", limit, after, _after(user_id))
    return pages.Page(_memberships(page.items), page.next_cursor)


class TooMany(Exception):
    """The person is a member of more than one mind, so a request must name the one it means."""


def only_mind(user_id: str) -> str | None:
    """The id of the person's one mind; None for none; several: `TooMany`."""
    ids = {str(item["mind_id"]) for item in pages.first(_member_query(user_id), 2)}
    ids |= {str(item["id"]) for item in pages.first(_owner_query(user_id), 2) if not roles.materialised(item)}
    if len(ids) > 1:
        raise TooMany
    return next(iter(ids), None)
