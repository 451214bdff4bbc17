"""What a write answers about the memories it may replace or did replace (`similar`, `supersedes`):
apart from `schemas` so each module reads in one sitting."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class SimilarMemory(_Answer):
    id: str
    key: str
    similarity: float = Field(ge=-1, le=1, description="Cosine of the two memories' meanings.")
    relation: Literal["repeat", "related"] = Field(
        description="repeat: says the same; related: the same subject, perhaps an older value of it "
        "(pass its id in `supersedes` when the new memory replaces it)."
    )
    content: str | None = Field(
        default=None,
        description="The memory's text (its first 200 characters, then …): the relation is a guess "
        "from meaning and shared words, so read it before passing `supersedes`.",
    )


class SupersedeOutcome(_Answer):
    id: str
    status: Literal["superseded", "proposed"] = Field(
        description="superseded: marked replaced now; proposed: it is verified, and an agent's mark "
        "waits for a person's review (`proposal_id`)."
    )
    proposal_id: str | None = None
