"""The days a memory is about: dates written in its content, read relative to when it was written,
and the day of its `occurred_at`. What the index keeps in `doc_dates` (search's time window, recall's
"Coming up").

"Dentist on 2026-12-14", "on Dec 9", "next Tuesday", "tomorrow", "in October" (a month: each of its
days) are read; vague words ("recently", "soon") and spans longer than MAX_SPAN_DAYS (a year) are
not: they say nothing about which day a memory is about. A memory keeps at most MAX_DAYS days.

A day is *due* (recall's "Coming up") when the memory's occurred_at or a span of at most
MAX_DUE_SPAN_DAYS names it ("on Dec 9", "tomorrow", "this weekend"): "this week" or "in October"
place a memory in time, so a question's window finds it, without saying anything is due that day.
"""

from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

from synapse.when.grammar import find
from synapse.when.vocabulary import tells_past

MAX_SPAN_DAYS = 31
MAX_DUE_SPAN_DAYS = 2
MAX_DAYS = 62
# Content longer than this is read only this far: its dates are in the first lines, and reading
# stays linear and cheap for the indexer whatever a memory holds (32 KiB at most).
MAX_READ_CHARS = 8_000


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def occurred_day(occurred_at: str | None) -> date | None:
    """The day of an `occurred_at` (a date `YYYY-MM-DD`, or a timestamp: its UTC day)."""
    if not occurred_at:
        return None
    if len(occurred_at) == 10:
        try:
            return date.fromisoformat(occurred_at)
        except ValueError:
            return None
    moment = _moment(occurred_at)
    return None if moment is None else moment.astimezone(UTC).date()


def written_day(created_at: str | None, occurred_at: str | None) -> date | None:
    """The day relative words in the content count from: when it was said (`occurred_at`, a
    timestamp) where known, else when it was stored (`created_at`)."""
    if occurred_at and len(occurred_at) > 10 and (moment := _moment(occurred_at)) is not None:
        return moment.astimezone(UTC).date()
    moment = _moment(created_at)
    return None if moment is None else moment.astimezone(UTC).date()


class DayAbout(NamedTuple):
    day: str  # ISO
    due: bool  # named on its own, not as a day of a longer span (module docstring)


def content_days(content: str, written: date) -> list[date]:
    """The days the content's dates name, read as if written on `written`, in order, each once."""
    return list(_dated(content, written))


def _dated(content: str, written: date) -> dict[date, bool]:
    """The content's days, each with whether one of its expressions makes it due."""
    days: dict[date, bool] = {}
    try:
        expressions = find(content[:MAX_READ_CHARS], written)
    except (ValueError, OverflowError):  # a date past the calendar's ends: none read (never a poison record)
        return {}
    for found in expressions:
        if found.vague or found.window.days > MAX_SPAN_DAYS:
            continue
        due = found.may_be_due and found.window.days <= MAX_DUE_SPAN_DAYS
        for offset in range(found.window.days):
            day = found.window.start + timedelta(days=offset)
            if day not in days and len(days) >= MAX_DAYS:
                return days
            days[day] = days.get(day, False) or due
    return days


def days_about(content: str, created_at: str | None, occurred_at: str | None) -> list[DayAbout]:
    """What `doc_dates` keeps for a memory: the day of `occurred_at` (due), then its content's days."""
    days: dict[date, bool] = {}
    if (occurred := occurred_day(occurred_at)) is not None:
        days[occurred] = True
    written = written_day(created_at, occurred_at)
    if written is not None:
        for day, due in _dated(content, written).items():
            days[day] = days.get(day, False) or due
        if not days and tells_past(content[:MAX_READ_CHARS].casefold()):
            days[written] = False  # "Got my flu jab at the health centre", told the day it happened
    return [DayAbout(d.isoformat(), due) for d, due in list(days.items())[:MAX_DAYS]]
