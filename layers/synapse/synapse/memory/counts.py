"""Memory counters, kept in the same transaction as every memory write.

Recall's header (`N total (X verified, Y unverified)`), its low-priority summary and its
left-out line need counts of the whole selection while it reads only what it prints, so the
counts cannot come from reading the memories. Each mind holds one counter item per category
(`NCAT#<category>`) and one per (tag, category) (`NTAG#<len>:<tag>#<category>`), with
`n` (memories), `v` (verified ones) and `low` (low-priority ones); an application's private
memories (tag `app:private`) are counted again under `NCAT#<category>#private`, right after their
category's counter, which the category counts subtract: a recall without a tag leaves them out. A
filter's counts are then at most 16 items. The mind's head (`minds.heads`, sk `NCAT`, its name)
sorts right before the category counters, so recall reads both in one query (`stored_with_head`).
The counters include expired memories until the expiry sweep takes them out (`expiry`, `sweep`:
expiry is the passing of time, not a write); readers subtract the expired ones not swept yet, which
they find, for the whole mind in one query, through the `mind_expiring` index
(`expiry.expired_not_swept`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from synapse.memory.kinds import APP_PRIVATE_TAG, Memory
from synapse.minds import heads
from synapse.storage import tables

CATEGORY_PREFIX = "NCAT#"
PRIVATE_SUFFIX = "#private"  # NCAT#<category>#private: the category's memories tagged app:private
TAG_PREFIX = "NTAG#"


def category_counter_sk(category: str) -> str:
    return f"{CATEGORY_PREFIX}{category}"


def tag_counters_prefix(tag: str) -> str:
    """Length-prefixed like the tag copies, so tag `c` never reads the counters of tag `c#`."""
    return f"{TAG_PREFIX}{len(tag):02d}:{tag}#"


def tag_counter_sk(tag: str, category: str) -> str:
    return tag_counters_prefix(tag) + category


class Tally:
    """Counts of a set of memories: all, verified, low priority. Written out rather than a dataclass,
    which compiles its methods at import (issue 14, cold start); a NamedTuple's `+` would concatenate."""

    __slots__ = ("low", "n", "v")

    def __init__(self, n: int = 0, v: int = 0, low: int = 0) -> None:
        self.n, self.v, self.low = n, v, low

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tally) and (self.n, self.v, self.low) == (other.n, other.v, other.low)

    def __hash__(self) -> int:
        return hash((self.n, self.v, self.low))

    def __repr__(self) -> str:
        return f"Tally(n={self.n}, v={self.v}, low={self.low})"

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.n + other.n, self.v + other.v, self.low + other.low)

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.n - other.n, self.v - other.v, self.low - other.low)

    @classmethod
    def of(cls, memory: Memory) -> Tally:
        return cls(1, int(memory.verified), int(memory.priority == "low"))


def _contributions(memory: Memory | None) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    if memory is None or memory.superseded_by is not None:  # a replaced memory counts nowhere
        return found
    tally = Tally.of(memory)
    keys = [category_counter_sk(memory.category)] + [tag_counter_sk(t, memory.category) for t in memory.tags]
    if APP_PRIVATE_TAG in memory.tags:
        keys.append(category_counter_sk(memory.category) + PRIVATE_SUFFIX)
    for sk in keys:
        found[(sk, "n")] += tally.n
        found[(sk, "v")] += tally.v
        found[(sk, "low")] += tally.low
    return found


def operations(mind_id: str, old: Memory | None, new: Memory | None) -> list[dict[str, Any]]:
    """Transaction updates moving the counters from `old` to `new` (None = absent); none if unchanged."""
    before, after = _contributions(old), _contributions(new)
    deltas: dict[str, dict[str, int]] = {}
    for sk, field in set(before) | set(after):
        delta = after[(sk, field)] - before[(sk, field)]
        if delta:
            deltas.setdefault(sk, {})[field] = delta
    ops = []
    for sk in sorted(deltas):
        fields = sorted(deltas[sk])
        ops.append(
            {
                "Update": {
                    "TableName": tables.memories_table(),
                    "Key": tables.dump({"pk": mind_id, "sk": sk}),
                    "UpdateExpression": "ADD " + ", ".join(f"#{f} :{f}" for f in fields),
                    "ExpressionAttributeNames": {f"#{f}": f for f in fields},
                    "ExpressionAttributeValues": tables.values(**deltas[sk]),
                }
            }
        )
    return ops


def _tally(item: dict[str, Any]) -> Tally:
    return Tally(int(item.get("n", 0)), int(item.get("v", 0)), int(item.get("low", 0)))


def _counted(
    items: list[dict[str, Any]], prefix: str, categories: frozenset[str] | None, found: dict[str, Tally]
) -> None:
    for item in items:
        category, tally = str(item["sk"])[len(prefix) :], _tally(item)
        if prefix == CATEGORY_PREFIX and category.endswith(PRIVATE_SUFFIX):
            category = category.removesuffix(PRIVATE_SUFFIX)  # after its category's: take them out
            if category in found:
                found[category] = found[category] - tally
                if found[category].n <= 0:
                    del found[category]
        elif (categories is None or category in categories) and tally.n > 0:
            found[category] = tally


def stored(mind_id: str, categories: frozenset[str] | None, tag: str | None) -> dict[str, Tally]:
    """Counts of the mind's stored memories (expired included) matching the filters, per category
    that has any: ≤ 16 items read, one query. Without a tag, applications' private memories are
    left out (`PRIVATE_SUFFIX`); a tag counts every memory that carries it."""
    prefix = tag_counters_prefix(tag) if tag is not None else CATEGORY_PREFIX
    found: dict[str, Tally] = {}
    for items, _ in tables.query_pages(
        TableName=tables.memories_table(),
        KeyConditionExpression="pk = :mind AND begins_with(sk, :prefix)",
        ExpressionAttributeValues=tables.values(mind=mind_id, prefix=prefix),
    ):
        _counted(items, prefix, categories, found)
    return found


# The mind's head (`minds.heads`) sorts right before the category counters, and nothing else between.
HEAD_RANGE = (heads.HEAD_SK, CATEGORY_PREFIX[:-1] + chr(ord(CATEGORY_PREFIX[-1]) + 1))  # NCAT .. NCAT$


def stored_with_head(
    mind_id: str, categories: frozenset[str] | None
) -> tuple[dict[str, Any] | None, dict[str, Tally]]:
    """The mind's head (None for a mind created before heads) and `stored(mind_id, categories,
    None)`, in one query of ≤ 17 items, read consistently: a rename shows at once, as it did when
    recall read the Minds item."""
    head: dict[str, Any] | None = None
    found: dict[str, Tally] = {}
    for items, _ in tables.query_pages(
        TableName=tables.memories_table(),
        KeyConditionExpression="pk = :mind AND sk BETWEEN :head AND :end",
        ExpressionAttributeValues=tables.values(mind=mind_id, head=HEAD_RANGE[0], end=HEAD_RANGE[1]),
        ConsistentRead=True,
    ):
        head = head or next((i for i in items if i["sk"] == heads.HEAD_SK), None)
        _counted([i for i in items if i["sk"] != heads.HEAD_SK], CATEGORY_PREFIX, categories, found)
    return head, found


def total(tallies: dict[str, Tally]) -> Tally:
    return sum(tallies.values(), Tally())
