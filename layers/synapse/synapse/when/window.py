"""A window of days, as the time grammar reads a question or a date (`grammar`) and as search and
recall's "Coming up" look days up in the index (`search.dated`).

Its own light module so that holding a window does not load the grammar: search's and recall's cold
start take this, and the grammar (its patterns compiled at import) loads with the first question
that may name a time (`words`)."""

from datetime import date
from typing import NamedTuple


class Window(NamedTuple):
    """Days from `start` to `end`, both included, in the reader's zone."""

    start: date
    end: date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def __contains__(self, day: object) -> bool:
        return isinstance(day, date) and self.start <= day <= self.end

    def public(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}
