"""The filters a search takes beside its query: as SQL on the index, and on the current record.

Without a `tag`, an application's private memories (tag `app:private`, docs/api.md "Application
data") are left out: they are not the person's; a `tag` selects every memory that carries it."""

from enum import StrEnum
from typing import Any, NamedTuple

from synapse.memory.kinds import APP_PRIVATE_TAG, Memory


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
    include_superseded: bool = False  # also memories a newer one replaced (`superseded_by`)

    def keeps(self, memory: Memory, now: str) -> bool:
        """The same filters on the current record (the index may be a moment behind it)."""
        return (
            (APP_PRIVATE_TAG not in memory.tags if self.tag is None else self.tag in memory.tags)
            and (self.category is None or memory.category == self.category)
            and (self.priority is None or memory.priority == self.priority)
            and (self.include_expired or memory.expires_at is None or memory.expires_at > now)
            and (self.include_superseded or memory.superseded_by is None)
        )

    def sql(self, now: str) -> tuple[str, list[Any]]:
        tagged = "EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.rowid = d.rowid)"
        clauses = [tagged if self.tag is not None else f"NOT {tagged}"]
        params: list[Any] = [self.tag if self.tag is not None else APP_PRIVATE_TAG]
        if self.category is not None:
            clauses.append("d.category = ?")
            params.append(self.category)
        if self.priority is not None:
            clauses.append("d.priority = ?")
            params.append(self.priority)
        if not self.include_expired:
            clauses.append("(d.expires_at IS NULL OR d.expires_at > ?)")
            params.append(now)
        if not self.include_superseded:  # inside the index query: a filter after top-k loses hits
            clauses.append("d.superseded_by IS NULL")
        return "".join(f" AND {c}" for c in clauses), params
