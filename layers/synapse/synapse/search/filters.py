"""The filters a search takes beside its query: as SQL on the index, and on the current record.

Without a `tag`, an application's private memories (tag `app:private`, docs/api.md "Application
data") are left out: they are not the person's; a `tag` selects every memory that carries it.

A time window (`after`/`before`) selects on `occurred_at` where set, else `created_at`, in the SQL
of every candidate (lexical and semantic), never after a top-k. A row indexed before the index held
those times (schema 3, upgraded in place) has neither: the SQL lets it through and `keeps`, on the
current record, decides, until the memory is written again or the index rebuilt."""

from enum import StrEnum
from typing import Any, NamedTuple

from synapse.core.moments import DATE_LENGTH, Window
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
    window: Window = Window()

    @property
    def narrowed(self) -> bool:
        """Whether a filter may leave out many memories (the semantic side then reads further)."""
        given = (self.tag, self.category, self.priority)
        return any(value is not None for value in given) or self.window.given

    def keeps(self, memory: Memory, now: str) -> bool:
        """The same filters on the current record (the index may be a moment behind it)."""
        return (
            (APP_PRIVATE_TAG not in memory.tags if self.tag is None else self.tag in memory.tags)
            and (self.category is None or memory.category == self.category)
            and (self.priority is None or memory.priority == self.priority)
            and (self.include_expired or memory.expires_at is None or memory.expires_at > now)
            and (not self.window.given or self.window.holds(memory.occurred_at, memory.created_at))
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
        if self.window.given:
            clause, values = _window_sql(self.window)
            clauses.append(clause)
            params += values
        if not self.include_superseded:  # inside the index query: a filter after top-k loses hits
            clauses.append("d.superseded_by IS NULL")
        return "".join(f" AND {c}" for c in clauses), params


# A stored occurred_at is a date (10 characters: its whole day counts) or a UTC timestamp.
_FIRST = (
    f"CASE WHEN length(d.occurred_at) = {DATE_LENGTH} THEN d.occurred_at || 'T00:00:00.000Z'"
    " ELSE d.occurred_at END"
)
_LAST = (
    f"CASE WHEN length(d.occurred_at) = {DATE_LENGTH} THEN d.occurred_at || 'T23:59:59.999Z'"
    " ELSE d.occurred_at END"
)


def _window_sql(window: Window) -> tuple[str, list[Any]]:
    """The memory's time in the window: its occurred_at (a date: any of its day) where set, else its
    created_at; a row without either (indexed before them) passes, for `keeps` to decide."""
    with_event, without_event = [], []
    if window.after is not None:
        with_event.append(f"{_LAST} >= ?")
        without_event.append("d.created_at >= ?")
    if window.before is not None:
        with_event.append(f"{_FIRST} <= ?")
        without_event.append("d.created_at <= ?")
    bounds = [bound for bound in (window.after, window.before) if bound is not None]
    params = [*bounds, *bounds]
    clause = (
        f"(d.created_at IS NULL OR (d.occurred_at IS NOT NULL AND {' AND '.join(with_event)})"
        f" OR (d.occurred_at IS NULL AND {' AND '.join(without_event)}))"
    )
    return clause, params
