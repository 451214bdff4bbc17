"""Event time as clients write it: a date (`2026-12-09`) or a timestamp with a zone, and the window
of time the reads' `after`/`before` select (SPEC §1 `occurred_at`, §3-§5 filters).

A date stays a date (a day, in no zone); a timestamp is stored as UTC text (`clock.to_iso`). Where a
date meets a window it counts as its whole day in UTC: it is in the window when that day overlaps it.
Both forms are text that sorts like time within its own kind, so the day's bounds are what the
indexes and the SQL compare (`day_start`, `day_end`).
"""

import re
from datetime import date, datetime
from typing import NamedTuple

from synapse.core import clock

DATE_LENGTH = 10  # `YYYY-MM-DD`: a stored occurred_at this long is a date, longer is a timestamp
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DAY_START, _DAY_END = "T00:00:00.000Z", "T23:59:59.999Z"
EXAMPLES = "a date such as 2026-12-09 or a timestamp with a zone such as 2026-12-09T14:30:00Z"


class NotAMoment(ValueError):
    """Text that is neither a date nor a timestamp with a zone: `rule` names why, for the details."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def parse(text: str) -> str:
    """`text` as stored: the date itself, or the timestamp in UTC with `Z`; else `NotAMoment`."""
    if _DATE.fullmatch(text):
        try:
            date.fromisoformat(text)
        except ValueError:
            raise NotAMoment("format", f"is not a real date ({text!r})") from None
        return text
    if "T" not in text and " " not in text:
        raise NotAMoment("format", f"must be {EXAMPLES}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise NotAMoment("format", f"must be {EXAMPLES}") from None
    if moment.tzinfo is None:
        raise NotAMoment(
            "timezone", "a timestamp must carry a time zone (Z or an offset such as +02:00), or give a date"
        )
    try:
        return clock.to_iso(moment)
    except (OverflowError, ValueError):
        raise NotAMoment("range", "must fall between the years 1 and 9999 in UTC") from None


def is_date(stored: str) -> bool:
    return len(stored) == DATE_LENGTH


def day_start(stored: str) -> str:
    """The first millisecond a stored moment can stand for: a date's midnight UTC, else itself."""
    return stored + _DAY_START if is_date(stored) else stored


def day_end(stored: str) -> str:
    """The last millisecond a stored moment can stand for: a date's 23:59:59.999 UTC, else itself."""
    return stored + _DAY_END if is_date(stored) else stored


def event_time(occurred_at: str | None, created_at: str) -> str:
    """When a memory is about, as a sortable UTC timestamp: occurred_at (a date at its midnight) where
    set, else when it was stored. The reads' order under a window, and the list's index key."""
    return day_start(occurred_at) if occurred_at else created_at


class Window(NamedTuple):
    """`after`/`before` of a read, both inclusive, as UTC timestamps (a date given as `after` starts
    at its midnight, as `before` ends at its last millisecond). None: open on that side."""

    after: str | None = None
    before: str | None = None

    @property
    def given(self) -> bool:
        return self.after is not None or self.before is not None

    def holds(self, occurred_at: str | None, created_at: str) -> bool:
        """Whether a memory's time lies in the window: its occurred_at (a date: any of its day)
        where set, else its created_at."""
        first = day_start(occurred_at) if occurred_at else created_at
        last = day_end(occurred_at) if occurred_at else created_at
        return (self.after is None or last >= self.after) and (self.before is None or first <= self.before)

    def scope(self) -> str:
        """For a cursor's scope: a page of one window is no page of another."""
        return f"{self.after or ''}..{self.before or ''}" if self.given else ""

    @classmethod
    def of(cls, after: str | None, before: str | None) -> "Window":
        """From two stored moments (`parse`): a date `after` from its first millisecond, a date
        `before` to its last."""
        return cls(None if after is None else day_start(after), None if before is None else day_end(before))
