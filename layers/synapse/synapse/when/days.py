"""Calendar arithmetic for the time grammar (`grammar`, `named`): whole months and years, weeks
from Monday, single days and days around one, as windows.

`calendar.monthrange` would import `locale` (5 ms at cold start): months are counted here."""

from datetime import date, timedelta

from synapse.when.window import Window


def month_window(year: int, month: int) -> Window:
    first = date(year, month, 1)
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return Window(first, following - timedelta(days=1))


def year_window(year: int) -> Window:
    return Window(date(year, 1, 1), date(year, 12, 31))


def add_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def one(day: date) -> Window:
    return Window(day, day)


def around(day: date, spread: int) -> Window:
    return Window(day - timedelta(days=spread), day + timedelta(days=spread))


def valid_date(year: int, month: int, day: int) -> date | None:
    """The day, or None where the month has no such day (30 February)."""
    try:
        return date(year, month, day)
    except ValueError:
        return None
