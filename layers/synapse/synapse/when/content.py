"""The days a memory is about: dates written in its content, read relative to when it was written,
and the day of its `occurred_at`. What the index keeps in `doc_dates` (search's time window, recall's
"Coming up").

"Dentist on 2026-12-14", "on Dec 9", "next Tuesday", "tomorrow", "in October" (a month: each of its
days) are read; vague words ("recently", "soon") and spans longer than MAX_SPAN_DAYS (a year) are
not: they say nothing about which day a memory is about. A memory keeps at most MAX_DAYS days.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from synapse.when.grammar import find

MAX_SPAN_DAYS = 31
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


def content_days(content: str, written: date) -> list[date]:
    """The days the content's dates name, read as if written on `written`, in order, each once."""
    days: dict[date, None] = {}
    try:
        expressions = find(content[:MAX_READ_CHARS], written)
    except (ValueError, OverflowError):  # a date past the calendar's ends: none read (never a poison record)
        return []
    for found in expressions:
        if found.vague or found.window.days > MAX_SPAN_DAYS:
            continue
        for offset in range(found.window.days):
            days.setdefault(found.window.start + timedelta(days=offset))
            if len(days) >= MAX_DAYS:
                return list(days)
    return list(days)


def days_about(content: str, created_at: str | None, occurred_at: str | None) -> list[str]:
    """What `doc_dates` keeps for a memory: the day of `occurred_at`, then its content's days (ISO)."""
    days: dict[date, None] = {}
    if (occurred := occurred_day(occurred_at)) is not None:
        days[occurred] = None
    written = written_day(created_at, occurred_at)
    if written is not None:
        for day in content_days(content, written):
            days.setdefault(day)
    return [d.isoformat() for d in list(days)[:MAX_DAYS]]
