"""Per-client request rates: a fixed one-minute window counted in the Minds table.

API Gateway's throttle is one budget for the whole stage, shared by every caller; this one is per
mind (every memory request, whichever credential) and per inbound hook (every authenticated
delivery). A request costs one conditional UpdateItem on `RATE#<subject>` / `<window>`: the count
grows only while under the limit, so a refused request writes nothing, and the item's `ttl`
lets DynamoDB remove a window soon after it ends. The answer past the limit is a 429 whose
`Retry-After` is the time left in the window.
"""

from __future__ import annotations

from synapse.core import clock
from synapse.core.errors import Throttled
from synapse.storage import tables

WINDOW_SECONDS = 60


def window_key(subject: str, window: int) -> dict[str, str]:
    return {"pk": f"RATE#{subject}", "sk": f"W#{window}"}


def admit(subject: str, per_minute: int, what: str) -> None:
    """Count one request for `subject` (e.g. `mind:m_…`) in this minute; 429 past `per_minute`.

    A limit of 0 (or less) is off: no read, no write. `what` names the subject in the message.
    """
    if per_minute <= 0:
        return
    now = int(clock.now().timestamp())
    window, into = divmod(now, WINDOW_SECONDS)
    try:
        tables.client().update_item(
            TableName=tables.minds_table(),
            Key=tables.dump(window_key(subject, window)),
            UpdateExpression="ADD n :one SET #ttl = if_not_exists(#ttl, :ttl)",
            ConditionExpression="attribute_not_exists(n) OR n < :limit",
            ExpressionAttributeNames={"#ttl": "ttl"},
            ExpressionAttributeValues=tables.values(
                one=1, limit=per_minute, ttl=now - into + 2 * WINDOW_SECONDS
            ),
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        raise Throttled(
            f"{what} has had its {per_minute} requests this minute; retry in {WINDOW_SECONDS - into} s.",
            retry_after=WINDOW_SECONDS - into,
        ) from None
