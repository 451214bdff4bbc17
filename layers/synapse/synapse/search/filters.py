"""The filters a search takes beside its query: as SQL on the index, and on the current record."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple

from synapse.memory.kinds import Memory


class Mode(StrEnum):
    """How a best-match query is ranked: both sides fused (default), by words alone, by meaning alone."""

    HYBRID = "hybrid"
    LEXICAL = "lexical"
    SEMANTIC = "semantic"


class SearchFilters(NamedTuple):
    tag: str | None = None
    category: str | None = None
    priority: str | None = None
    include_expired: bool = False

    def keeps(self, memory: Memory, now: str) -> bool:
        """The same filters on the current record (the index may be a moment behind it)."""
        return (
            (self.tag is None or self.tag in memory.tags)
            and (self.category is None or memory.category == self.category)
            and (self.priority is None or memory.priority == self.priority)
            and (self.include_expired or memory.expires_at is None or memory.expires_at > now)
        )

    def sql(self, now: str) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if self.tag is not None:
            clauses.append("EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid)")
            params.append(self.tag)
        if self.category is not None:
            clauses.append("d.category = ?")
            params.append(self.category)
        if self.priority is not None:
            clauses.append("d.priority = ?")
            params.append(self.priority)
        if not self.include_expired:
            clauses.append("(d.expires_at IS NULL OR d.expires_at > ?)")
            params.append(now)
        return "".join(f" AND {c}" for c in clauses), params
