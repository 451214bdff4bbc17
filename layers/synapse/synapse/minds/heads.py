"""The mind's head: its name, copied into the Memories table right before its category counters.

Recall's header needs the mind's name and its counts. The counts live in the mind's partition of
the Memories table (`NCAT#<category>`, `memory.counts`); the name lived only on the Minds item, so a
recall cost a GetItem on top. The head item (`pk` = mind id, `sk` = `NCAT`, `name`) sorts just
before the counters, so one query `sk BETWEEN NCAT AND NCAT$` reads name and counts together.

Kept exact by writing it in the same transaction as the Minds item's name: `create_mind` and
`update_mind` (a rename) put it unconditionally. Deleting a mind purges its whole partition, head
included. Minds created before the head existed have none: recall then reads the Minds item and
`heal`s, with a Put conditioned on no head existing, in a transaction that also checks the mind
still exists. A rename racing the heal always wins: if the rename commits first, it wrote the head
and the heal's condition fails; if the heal commits first, the rename overwrites it. The check on
the mind keeps a heal from leaving a head behind in a mind being deleted (the mind item goes
before its partition is purged).
"""

from __future__ import annotations

from typing import Any

from synapse.core.errors import Contention
from synapse.storage import tables

# What sorts right before `NCAT#<category>`: `memory.counts` reads it with them.
HEAD_SK = "NCAT"


def head_key(mind_id: str) -> dict[str, str]:
    return {"pk": mind_id, "sk": HEAD_SK}


def put_operation(mind_id: str, name: str) -> dict[str, Any]:
    """The head as it must be after the transaction that writes the mind's name."""
    return {
        "Put": {
            "TableName": tables.memories_table(),
            "Item": tables.dump({**head_key(mind_id), "name": name}),
        }
    }


def heal(mind_id: str, name: str) -> None:
    """Write the head of a mind created before heads existed, unless one exists or the mind is gone."""
    check_mind = {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }
    put = put_operation(mind_id, name)
    put["Put"]["ConditionExpression"] = "attribute_not_exists(pk)"
    try:
        tables.transact([check_mind, put])
    except (tables.client().exceptions.TransactionCanceledException, Contention):
        pass  # a rename wrote it meanwhile, or the mind is being deleted; or the next recall heals
