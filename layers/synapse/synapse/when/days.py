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


def spanning(first: date, days_after: int) -> Window | None:
    """`first` and the `days_after` days after it: a range of a month at most (else None; 0: the day)."""
    return Window(first, first + timedelta(days=days_after)) if 0 <= days_after <= 31 else None


def around(day: date, spread: int) -> Window:
    return Window(day - timedelta(days=spread), day + timedelta(days=spread))


def valid_date(year: int, month: int, day: int) -> date | None:
    """The day, or None where the month has no such day (30 February)."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def shifted(window: Window, by: int) -> Window:
    return Window(window.start + timedelta(days=by), window.end + timedelta(days=by))


def numeric(first: int, second: int, year: int, day_first: bool) -> Window | None:
    """13/05/27 or 5/13/2027: read only where the order is plain (one part over 12), unless it is
    `day_first` (13.05.2027: as written where dots are used). A two-digit year is this century's."""
    year += 2000 if year < 100 else 0
    if day_first or first > 12 >= second:
        found = valid_date(year, second, first)
    elif second > 12 >= first:
        found = valid_date(year, first, second)
    else:
        return None
    return None if found is None else one(found)


def unit_window(today: date, unit: str, steps: int) -> Window:
    """The week (Monday to Sunday), weekend, month or year `steps` from today's (-1: the last one);
    "today": the day `steps` days on."""
    if unit == "today":
        return one(today + timedelta(days=steps))
    if unit in {"week", "weekend"}:
        monday = week_start(today) + timedelta(days=7 * steps)
        return Window(monday + timedelta(days=5 if unit == "weekend" else 0), monday + timedelta(days=6))
    if unit == "month":
        return month_window(*add_months(today, steps))
    return year_window(today.year + steps)


def a_year_before(day: date) -> date:
    """The same day a year earlier (29 February: the 28th)."""
    return years_before(day, 1)


def years_before(day: date, years: int) -> date:
    """The same day `years` earlier (29 February: the 28th)."""
    return valid_date(day.year - years, day.month, day.day) or date(day.year - years, 2, 28)
