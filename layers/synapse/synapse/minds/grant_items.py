"""Where an app's OAuth grant and its tokens are stored: the item layout `oauth.grants` writes and
`teams.holdings` revokes when the approver loses the owner role (below both, so neither imports
the other)."""

from __future__ import annotations

from typing import Any

from synapse.storage import tables

GRANT_SK = "GRANT#"


def access_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHTOKEN#{digest}", "sk": "TOKEN"}


def refresh_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHREFRESH#{digest}", "sk": "REFRESH"}


def grant_key(mind_id: str, grant_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{GRANT_SK}{grant_id}"}


def delete(key: dict[str, str], condition: str | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"TableName": tables.minds_table(), "Key": tables.dump(key)}
    if condition:
        operation["ConditionExpression"] = condition
    return {"Delete": operation}
