"""A question's time: its expressions read relative to now in the asker's zone, as one window of
days, and the question's other words (what is still searched as words).

"What is coming up next week?" on Thursday 3 December 2026 reads as 7-13 December and leaves
"What is ?" to the words (the names of months and weekdays stay words as well: "the dentist in
March?" still matches "Dentist appointment every March"); several expressions narrow each other
("upcoming … next week": the days both name), or, when they share no day ("yesterday or
tomorrow"), span from the first to the last.
"""

import re
from datetime import datetime, tzinfo
from typing import NamedTuple

from synapse.when.grammar import Found, find
from synapse.when.named import HOLIDAY_PATTERN, SEASONS
from synapse.when.vocabulary import MONTHS, WEEKDAYS
from synapse.when.window import Window

# Names of months, weekdays, seasons and holidays stay words too: a memory saying "every March",
# "never on Fridays" or "New Year's Eve at Anna's" matches them as written; the relative words
# around them ("next", "last", "week", "ago") do not.
_NAMES = re.compile(
    r"\b(?:"
    + "|".join(sorted({*(m for m in MONTHS if len(m) > 3), *WEEKDAYS, *SEASONS}, key=len, reverse=True))
    + r")s?\b|\b(?:"
    + HOLIDAY_PATTERN
    + r")\b",
    re.IGNORECASE,
)


class QuestionTime(NamedTuple):
    window: Window | None  # None: the question names no time
    rest: str  # the question with its time expressions blanked out
    expressions: tuple[str, ...] = ()  # as written, in order


def _shared(windows: list[Window]) -> Window | None:
    start, end = max(w.start for w in windows), min(w.end for w in windows)
    return Window(start, end) if start <= end else None


def combined(found: list[Found]) -> Window:
    """The days every expression names; if they share none, the days the precise ones share (a
    direction gives way: "coming up in October" is October); else from the first start to the last
    end ("yesterday or tomorrow")."""
    windows = [f.window for f in found]
    precise = [f.window for f in found if not f.vague] or windows
    shared = _shared(windows) or _shared(precise)
    return shared or Window(min(w.start for w in precise), max(w.end for w in precise))


def read_question(text: str, now: datetime, zone: tzinfo) -> QuestionTime:
    """`text`'s time expressions, relative to `now` (aware) as a clock in `zone` shows it."""
    today = now.astimezone(zone).date()
    try:
        found: list[Found] = find(text, today)
    except (ValueError, OverflowError):  # a window past the calendar's ends: no time read
        return QuestionTime(None, text)
    if not found:
        return QuestionTime(None, text)
    rest = list(text)
    for expression in found:
        blank = [" "] * (expression.end - expression.start)
        for name in _NAMES.finditer(text, expression.start, expression.end):
            blank[name.start() - expression.start : name.end() - expression.start] = list(name[0])
        rest[expression.start : expression.end] = blank
    written = tuple(text[f.start : f.end] for f in found)
    return QuestionTime(combined(found), "".join(rest), written)
