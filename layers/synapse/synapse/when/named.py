"""The calendar's named spans: seasons ("next summer", "last winter", "autumn 2025") and holidays
("Christmas", "last Halloween", "Easter 2027"), as windows of days (`grammar` holds the patterns).

Seasons are the meteorological ones of the northern hemisphere, whole months: spring March to May,
summer June to August, autumn (fall) September to November, winter December to February, named by
the year it starts in ("winter 2025" is December 2025 to February 2026). A holiday is its day, and
its stretch (PERIODS: "the Christmas holidays") the days around it; Easter is Western Easter Sunday,
Thanksgiving the fourth Thursday of November (the United States').

Which one a bare name means follows the grammar's rule for a bare month: the one under way or the
next (the sentence's tense past: the one under way or the last); "next" skips the one under way,
"last" the one under way too, "this" is the one under way, else this year's.
"""

import re
from collections.abc import Callable
from datetime import date, timedelta

from synapse.when.window import Window

SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # the month each starts
# A season names its months only with a modifier, a preposition or a year ("last summer", "in the
# fall", "winter 2025"): alone it is mostly a word ("Did he fall?", "my winter coat"). Before one of
# these nouns it names a thing, not three months: "over spring break" is a week nobody dated, and a
# question about it must not favour whatever was written from March to May.
SEASON_NOUNS = (
    "break|breaks|semester|term|quarter|session|school|camp|job|jobs|internship|intern|cleaning|clean"
    "|roll|rolls|solstice|equinox|league|sale|sales|collection|clothes|coat|coats|jacket|tires|tyres"
    "|wardrobe|menu|squash|reading|festival|olympics|games|house|home|cottage|residence|schedule|hours"
)


def _easter(year: int) -> date:
    """Western Easter Sunday (the anonymous Gregorian algorithm)."""
    a, (b, c) = year % 19, divmod(year, 100)
    d, e = divmod(b, 4)
    g = (b - (b + 8) // 25 + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    weekday = (32 + 2 * e + 2 * i - h - k) % 7
    shift = (a + 11 * h + 22 * weekday) // 451
    month, day = divmod(h + weekday - 7 * shift + 114, 31)
    return date(year, month, day + 1)


def _thanksgiving(year: int) -> date:
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


# By their names folded: lower case, no apostrophes or full stops ("New Year's Eve", "St. Patrick's").
HOLIDAYS: dict[str, Callable[[int], date]] = {
    "christmas eve": lambda y: date(y, 12, 24),
    "christmas day": lambda y: date(y, 12, 25),
    "christmas": lambda y: date(y, 12, 25),
    "xmas": lambda y: date(y, 12, 25),
    "boxing day": lambda y: date(y, 12, 26),
    "new years eve": lambda y: date(y, 12, 31),
    "new years day": lambda y: date(y, 1, 1),
    "halloween": lambda y: date(y, 10, 31),
    "valentines day": lambda y: date(y, 2, 14),
    "valentines": lambda y: date(y, 2, 14),
    "st patricks day": lambda y: date(y, 3, 17),
    "easter sunday": _easter,
    "easter": _easter,
    "thanksgiving": _thanksgiving,
}
# Holidays that name a stretch of days around their day: (the holiday, days before, days after).
# "The Christmas holidays" are Christmas Eve to New Year's Day (a question about them wants Boxing
# Day and New Year's Eve too, not the 25th alone); Easter's school break a week either side.
PERIODS = {
    "christmas holidays": ("christmas", 1, 7),
    "christmas holiday": ("christmas", 1, 7),
    "christmas break": ("christmas", 1, 7),
    "christmas period": ("christmas", 1, 7),
    "easter holidays": ("easter", 7, 7),
    "easter holiday": ("easter", 7, 7),
    "easter break": ("easter", 7, 7),
    "easter weekend": ("easter", 2, 1),
}
_APOSTROPHE = "['\u2019]"  # typed, or a word processor's right single quotation mark
_POSSESSIVES = {w: f"{w[:-1]}{_APOSTROPHE}?s" for w in ("years", "valentines", "patricks")}


def _as_written(name: str) -> str:
    words = [_POSSESSIVES.get(w, r"(?:st\.?|saint)" if w == "st" else re.escape(w)) for w in name.split()]
    return r"\s+".join(words)


# The grammar's alternation of every holiday as it may be written, the longest names first.
HOLIDAY_PATTERN = "|".join(_as_written(name) for name in sorted([*HOLIDAYS, *PERIODS], key=len, reverse=True))


def _folded(written: str) -> str:
    name = re.sub(_APOSTROPHE + "|[.]", "", " ".join(written.split()))
    return "st " + name[len("saint ") :] if name.startswith("saint ") else name


def _season(year: int, name: str) -> Window:
    start = date(year, SEASONS[name], 1)
    following = date(year + (start.month + 3) // 13, (start.month + 2) % 12 + 1, 1)
    return Window(start, following - timedelta(days=1))


def _pick(today: date, of_year: Callable[[int], Window], modifier: str, past: bool) -> Window:
    """The one `modifier` and the tense name, of the instances from two years back to next year's."""
    instances = [of_year(today.year + step) for step in (-2, -1, 0, 1)]
    current = next((w for w in instances if today in w), None)
    ended = [w for w in instances if w.end < today][-1]
    ahead = next(w for w in instances if w.start > today)
    if modifier == "this":
        return current or instances[2]
    if modifier == "next":
        return ahead
    if modifier in {"last", "past"}:
        return ended
    return current or (ended if past else ahead)


def season(today: date, name: str, modifier: str, year: str | None, past: bool) -> Window:
    """`name` (a key of SEASONS) as "this/next/last <name>", "<name> <year>" or bare."""
    if year:
        return _season(int(year), name)
    return _pick(today, lambda y: _season(y, name), modifier, past)


def holiday(today: date, name: str, modifier: str, year: str | None, past: bool) -> Window:
    """`name` (a key of HOLIDAYS or PERIODS) as "this/next/last <name>", "<name> <year>" or bare: its
    day, or the days of its stretch."""
    folded = _folded(name)
    anchor, before, after = PERIODS.get(folded, (folded, 0, 0))
    day_of = HOLIDAYS[anchor]

    def of_year(y: int) -> Window:
        return Window(day_of(y) - timedelta(days=before), day_of(y) + timedelta(days=after))

    return of_year(int(year)) if year else _pick(today, of_year, modifier, past)
