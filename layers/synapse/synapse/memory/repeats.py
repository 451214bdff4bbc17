"""A write's answer names the memories it repeats: how the store asks whoever can tell.

The store cannot: the mind's vectors live in its search index, a package above this one. The
callers that answer a write (the REST, batch and hook handlers, MCP) pass `search.repeats.similar_to`
as `FindSimilar`; the rest (restores, proposals, tests) pass nothing and pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from synapse.memory.changes import WriteFields
from synapse.memory.kinds import Memory


class FindSimilar(Protocol):
    """Given a mind and memories just stored in it, the other memories each one repeats
    (`search.repeats`, passed in by the callers above this package: the index is search's business,
    not the store's); None for a memory whose repeats could not be looked up (the model failed):
    `similar_unavailable`."""

    def __call__(self, mind_id: str, memories: Sequence[Memory], /) -> list[list[dict[str, Any]] | None]: ...


def _nothing_to_wait_for() -> None:
    return None


def started_ahead(
    find: FindSimilar | None, mind_id: str, writes: Sequence[WriteFields]
) -> Callable[[], None]:
    """Let `find` start on the writes (embedding their texts) while the store writes them, if it can
    (`search.repeats.similar_to` can: a batch's DynamoDB transactions then cost no extra time);
    returns what to call before `find` is asked, to wait for that work."""
    ahead = getattr(find, "ahead", None)
    return ahead(mind_id, writes) if ahead is not None and writes else _nothing_to_wait_for


def with_similar(mind_id: str, outcomes: list[Any], find: FindSimilar | None) -> list[Any]:
    """The stored writes (not proposals, not errors) with the memories they repeat."""
    stored = [(at, o) for at, o in enumerate(outcomes) if hasattr(o, "similar") and o.proposal is None]
    if not stored or find is None:
        return outcomes
    hints = find(mind_id, [o.memory for _, o in stored])
    out = list(outcomes)
    for (at, outcome), similar in zip(stored, hints, strict=True):
        if similar is None:
            out[at] = outcome._replace(similar_unavailable=True)
        elif similar:
            out[at] = outcome._replace(similar=tuple(similar))
    return out


def similar_fields(outcome: Any) -> dict[str, Any]:
    """What a write's answer says beside the memory, at every door: `similar` when it names some,
    `similar_unavailable: true` when they could not be looked up (the write is stored all the same),
    and `supersedes`, what became of each memory it named there."""
    found: dict[str, Any] = {}
    if outcome.similar:
        found["similar"] = list(outcome.similar)
    elif outcome.similar_unavailable:
        found["similar_unavailable"] = True
    if outcome.supersedes:
        found["supersedes"] = list(outcome.supersedes)
    return found
