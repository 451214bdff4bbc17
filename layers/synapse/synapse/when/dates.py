"""Calendar dates as written ("Dec 9", "9 December 2027", "2027-12-09", "25-26 November", "on the
9th", "20/03"): which day or days each names, a bare one chosen by the sentence's tense (the next,
or in the past tense the last). Apart from `grammar`, which holds the rules that match them."""

import re
from datetime import date

from synapse.when import days
from synapse.when.vocabulary import MONTHS, Tense
from synapse.when.window import Window


def month_day(today: date, month: int, day: int, year: str | None, tense: Tense) -> Window | None:
    """A day of a month: in `year`, else the next one (past tense: the last one)."""
    if year:
        found = days.valid_date(int(year), month, day)
        return None if found is None else days.one(found)
    this_year = days.valid_date(today.year, month, day)
    if tense is Tense.FUTURE:
        if this_year is not None and this_year >= today:
            return days.one(this_year)
        found = days.valid_date(today.year + 1, month, day)
    else:
        if this_year is not None and this_year <= today:
            return days.one(this_year)
        found = days.valid_date(today.year - 1, month, day)
    return None if found is None else days.one(found)


def of_month(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """ "Dec 9", "9th of December 2027", "Friday 7 April" (the weekday a reader's check, not read)."""
    return month_day(today, MONTHS[m["month"]], int(m["d"]), m["year"], tense)


def iso(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """2027-07-10, or 2027-07-10 to 2027-07-17 (each day, a month at most)."""
    found = days.valid_date(int(m["y"]), int(m["m"]), int(m["d"]))
    end = days.valid_date(int(m["y2"]), int(m["m2"]), int(m["d2"])) if m["y2"] else None
    return None if found is None else days.spanning(found, (end - found).days if end else 0)


def day_range(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """From the `d`th to the `d2`th of `month` (a month at most): the first day as `month_day` picks it."""
    first = month_day(today, MONTHS[m["month"]], int(m["d"]), m["year"], tense)
    return None if first is None else days.spanning(first.start, int(m["d2"]) - int(m["d"]))


def nth(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """ "on the 9th": of this month, else the next (past tense: the last) month that has it."""
    day = int(m["d"])
    for step in range(3):
        shift = step if tense is Tense.FUTURE else -step
        found = days.valid_date(*days.add_months(today, shift), day)
        if found is not None and (found >= today if tense is Tense.FUTURE else found <= today):
            return days.one(found)
    return None


def day_slash_month(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """ "on 20/03": a day and month with no year, read only when one of the two is over 12 ("20/03"
    is 20 March, "03/20" 20 March too); "4/3" could be either, and is not read."""
    a, b = int(m["a"]), int(m["b"])
    if (a > 12) == (b > 12):
        return None
    day, month = (a, b) if a > 12 else (b, a)
    return month_day(today, month, day, None, tense)
