"""The OpenAPI operation of GET /memory/{id}/similar (merged into `document.OPERATIONS`): a write's
`similar`, asked again after the write, each memory with it."""

from __future__ import annotations

from pydantic import Field

from synapse.openapi.parts import Op
from synapse.openapi.replacing import SimilarMemory
from synapse.openapi.schemas import Memory, _Answer


class SimilarWithMemory(SimilarMemory):
    memory: Memory = Field(description="The memory as it is now (current: not deleted, not replaced).")


class SimilarNow(_Answer):
    id: str = Field(description="The memory asked about.")
    similar: list[SimilarWithMemory] | None = Field(
        default=None,
        description="The memories it may replace, most similar first, as its write's `similar` names "
        "them but against the index as it is now: `repeat` (says the same) or `related` (the same "
        "subject, perhaps an older value: a person marks it replaced with PUT /memory/{id} "
        "`supersedes`). Absent when they could not be looked up (`similar_unavailable`).",
    )
    similar_unavailable: bool | None = Field(
        default=None, description="true when the model failed: nothing could be compared."
    )


OPERATIONS = {
    ("GET", "/memory/{id}/similar"): Op(
        "similarMemories",
        "The memories a stored memory may replace, each with the memory itself",
        "memory",
        "either",
        {200: SimilarNow},
    ),
}
