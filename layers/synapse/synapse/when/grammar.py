"""The time expressions Synapse reads, each resolved to a window of days relative to a day `today`.

Why a grammar of our own (docs/time.md has the measurements): the date libraries measured
(dateparser, parsedatetime, ctparse) return a *point* ("next week" → now + 7 days), where a question
means a span (Monday to Sunday of next week); they guess past or future by one global setting, where
a question's tense decides; and the best of them took 1.5 s of CPU on its first call. The spans and
the tense are ours to write in any case; recognising the expressions is a few patterns more.

Rules (docs/rules.md "Time in questions"): weeks run Monday to Sunday; a bare weekday, month or
"Dec 9" is the next one (today included) unless the sentence is in the past tense, then the last
one; "next Friday" is the Friday of next week, "this Friday" the Friday of this week, "last Friday"
the last Friday before today; "the weekend" is Saturday and Sunday.
"""

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple

from synapse.when import dates, days, named
from synapse.when.vocabulary import (
    FULL_MONTH,
    MONTH,
    MONTHS,
    NUMBER,
    ORDINAL,
    RANGE_TO,
    UNIT,
    WEEKDAY,
    WEEKDAYS,
    WORD_END,
    WORD_START,
    WORDLIKE_MONTHS,
    Tense,
    number,
    tense_of,
)
from synapse.when.window import Window


class Found(NamedTuple):
    """An expression found in a text: its span, what it reads as, whether it is `vague` (a direction
    or a whole year: "recently", "upcoming", "in 2025") and whether a memory whose content says it
    is due that day (`may_be_due`: a holiday's name there names a thing as often as a day)."""

    start: int
    end: int
    window: Window
    vague: bool = False
    may_be_due: bool = True


VAGUE_DAYS = 14  # "recently" looks this far back, "upcoming" this far ahead
_DAYS_IN = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
_WEEKS_ON = {"a week": 7, "a fortnight": 14, "two weeks": 14}
_STEPS = {"before last": -2, "after next": 2, "after this": 1, "before this": -1}

_SEASON = "|".join(named.SEASONS)
_HOLIDAY = named.HOLIDAY_PATTERN


def _month(today: date, month: int, year: str | None, modifier: str, tense: Tense) -> Window:
    if year:
        return days.month_window(int(year), month)
    if modifier == "next" or (modifier == "coming" and month == today.month):
        tense, later = Tense.FUTURE, month == today.month
    elif modifier in {"last", "past"}:
        tense, later = Tense.PAST, month == today.month
    else:
        later = False
    if modifier == "this":
        return days.month_window(today.year, month)
    if tense is Tense.FUTURE:
        year_of = (
            today.year if month > today.month or (month == today.month and not later) else today.year + 1
        )
    else:
        year_of = (
            today.year if month < today.month or (month == today.month and not later) else today.year - 1
        )
    return days.month_window(year_of, month)


def _weekday(today: date, weekday: int, modifier: str, tense: Tense) -> Window:
    if modifier == "next":
        return days.one(days.week_start(today) + timedelta(days=7 + weekday))
    if modifier == "this":
        return days.one(days.week_start(today) + timedelta(days=weekday))
    if modifier in {"last", "past"} or (modifier in {"", "on"} and tense is Tense.PAST):
        back = (today.weekday() - weekday) % 7 or 7
        return days.one(today - timedelta(days=back))
    ahead = (weekday - today.weekday()) % 7
    if modifier == "coming" and ahead == 0:
        ahead = 7
    return days.one(today + timedelta(days=ahead))


def _weekend(today: date, modifier: str, tense: Tense) -> Window:
    if modifier == "next":
        return days.unit_window(today, "weekend", 1)
    if modifier in {"last", "past"} or (tense is Tense.PAST and modifier != "this" and today.weekday() < 5):
        return days.unit_window(today, "weekend", -1)
    return days.unit_window(today, "weekend", 0)


def _period(today: date, modifier: str, unit: str) -> Window:
    """this/next/last/past/coming week, month or year."""
    if modifier in {"past", "coming"} or unit == "fortnight":  # rolling: the last or next 7 days, …
        length = _DAYS_IN[unit]
        if modifier in {"past", "last", "previous"}:
            return Window(today - timedelta(days=length), today)
        return Window(today, today + timedelta(days=length))
    return days.unit_window(today, unit, {"this": 0, "next": 1, "last": -1, "previous": -1}[modifier])


def _within(window: Window, part: str, today: date) -> Window:
    """ "earlier this week" (from its start to today), "later this month" (from today to its end)."""
    if part == "earlier" and window.start <= today <= window.end:
        return Window(window.start, today)
    if part == "later" and window.start <= today <= window.end:
        return Window(today, window.end)
    return window


# ---------------------------------------------------------------- the patterns


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], date, Tense], Window | None]
    vague: bool = False
    may_be_due: bool = True


def _rule(
    pattern: str,
    resolve: Callable[[re.Match[str], date, Tense], Window | None],
    vague: bool = False,
    may_be_due: bool = True,
) -> _Rule:
    return _Rule(re.compile(WORD_START + pattern + WORD_END), resolve, vague, may_be_due)


def _ago(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    n, unit = number(m["n"]), m["unit"]
    sign = -1 if m["ago"] else 1
    if unit == "day":
        return days.around(today + timedelta(days=sign * n), 0 if n <= 1 else 1)
    if unit in {"week", "fortnight"}:
        return days.around(today + timedelta(days=sign * _DAYS_IN[unit] * n), 3)
    if unit == "month":
        return days.month_window(*days.add_months(today, sign * n))
    return days.year_window(today.year + sign * n)


def _span(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """the past 3 days, the next two weeks, within 10 days."""
    n, unit = number(m["n"]), m["unit"]
    length = timedelta(days=n * _DAYS_IN[unit])
    if m["dir"] in {"past", "last"}:
        return Window(today - length, today)
    return Window(today, today + length)


def _named(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    """A season or a holiday (`named`): "this past summer" is the last one."""
    modifier = " ".join((m["mod"] or "").split())
    modifier = "last" if modifier == "this past" else modifier
    if m["season"]:
        name = m["season"]
        if not (modifier or m["prep"] or m["year"]):
            return None
        return named.season(today, name, modifier, m["year"], tense is Tense.PAST)
    return named.holiday(today, m["holiday"], modifier, m["year"], tense is Tense.PAST)


def _month_rule(m: re.Match[str], today: date, tense: Tense) -> Window | None:
    name, modifier = m["month"], m["mod"] or ""
    if name in WORDLIKE_MONTHS and not (modifier or m["year"] or m["prep"] or m["part"]):
        return None
    window = _month(today, MONTHS[name], m["year"], modifier, tense)
    part = m["part"]
    if part == "early":
        return Window(window.start, window.start + timedelta(days=9))
    if part in {"mid", "middle of"}:
        return Window(window.start + timedelta(days=10), window.start + timedelta(days=19))
    if part in {"late", "end of"}:
        return Window(window.start + timedelta(days=20), window.end)
    return window


_RULES: list[_Rule] = [
    _rule(
        r"(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4}|\d{2})(?![/\d])",
        lambda m, t, s: days.numeric(int(m["a"]), int(m["b"]), int(m["y"]), day_first=False),
    ),
    _rule(  # no year: only after a preposition ("on 20/03", not "24/7 support", "3/4 cup")
        r"(?:(?<=on )|(?<=for )|(?<=by )|(?<=from )|(?<=until )|(?<=till )|(?<=before )|(?<=after ))"
        r"(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![/\d])",
        dates.day_slash_month,
    ),
    _rule(
        r"(?P<a>\d{1,2})\.(?P<b>\d{1,2})\.(?P<y>\d{4})",
        lambda m, t, s: days.numeric(int(m["a"]), int(m["b"]), int(m["y"]), day_first=True),
    ),
    _rule(
        r"(?:from\s+)?(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?:t[\d:.]+(?:z|[+-]\d{2}:?\d{2})?)?"
        rf"(?:{RANGE_TO}(?P<y2>\d{{4}})-(?P<m2>\d{{2}})-(?P<d2>\d{{2}}))?",
        dates.iso,
    ),
    _rule(
        rf"(?:on\s+)?(?:(?:{WEEKDAY}),?\s+)?(?P<month>{MONTH})\.?\s+(?P<d>\d{{1,2}}){ORDINAL}(?:,?\s+(?P<year>\d{{4}}))?",
        dates.of_month,
    ),
    _rule(
        rf"(?:on\s+)?(?:(?:{WEEKDAY}),?\s+)?(?:the\s+)?(?P<d>\d{{1,2}}){ORDINAL}\s+(?:of\s+)?(?P<month>{MONTH})\.?"
        r"(?:,?\s+(?P<year>\d{4}))?",
        dates.of_month,
    ),
    _rule(  # "25-26 November", "from the 3rd to 5th of May": the days between, the first chosen as a day is
        rf"(?:(?:from|on)\s+)?(?:the\s+)?(?P<d>\d{{1,2}}){ORDINAL}{RANGE_TO}(?P<d2>\d{{1,2}}){ORDINAL}\s+(?:of\s+)?"
        rf"(?P<month>{MONTH})\.?(?:,?\s+(?P<year>\d{{4}}))?",
        dates.day_range,
    ),
    _rule(  # "July 10-17", "Feb 3 to 7, 2028"
        rf"(?:from\s+)?(?P<month>{MONTH})\.?\s+(?P<d>\d{{1,2}}){ORDINAL}{RANGE_TO}(?P<d2>\d{{1,2}}){ORDINAL}"
        r"(?:,?\s+(?P<year>\d{4}))?",
        dates.day_range,
    ),
    _rule(r"(?:on\s+)?the\s+(?P<d>\d{1,2})(?:st|nd|rd|th)", dates.nth),
    _rule(r"(?:the\s+)?day\s+after\s+tomorrow", lambda m, t, s: days.one(t + timedelta(days=2))),
    _rule(r"(?:the\s+)?day\s+before\s+yesterday", lambda m, t, s: days.one(t - timedelta(days=2))),
    _rule(r"today|tonight|this\s+(?:morning|afternoon|evening)", lambda m, t, s: days.one(t)),
    _rule(
        r"after\s+today",  # a direction: "later this week, after today" is tomorrow to Sunday
        lambda m, t, s: Window(t + timedelta(days=1), t + timedelta(days=VAGUE_DAYS)),
        vague=True,
    ),
    _rule(  # "a year ago this week", "two years ago today": that day, week or month, years back
        rf"(?P<n>{NUMBER})\s+years?\s+ago\s+(?:this\s+)?(?P<unit>today|week|month)",
        lambda m, t, s: days.unit_window(days.years_before(t, number(m["n"])), m["unit"], 0),
    ),
    _rule(
        r"tomorrow(?:\s+(?:morning|afternoon|evening|night))?",
        lambda m, t, s: days.one(t + timedelta(days=1)),
    ),
    _rule(r"yesterday|last\s+night", lambda m, t, s: days.one(t - timedelta(days=1))),
    _rule(
        r"(?:(?P<part>earlier|later)\s+)?(?:the\s+)?(?P<mod>this|next|last|past|previous|coming)\s+"
        r"(?P<unit>week|fortnight|month|year)",
        lambda m, t, s: _within(_period(t, m["mod"], m["unit"]), m["part"] or "", t),
    ),
    _rule(
        r"(?:(?:on|over|at|during)\s+)?(?:(?P<mod>this|next|last|past|coming)\s+|the\s+)?weekend(?!\s+of\s)",
        lambda m, t, s: _weekend(t, m["mod"] or "", s),
    ),
    _rule(
        rf"(?:(?P<mod>this|next|last|past|coming|on)\s+)?(?:on\s+)?(?P<day>{WEEKDAY})",
        lambda m, t, s: _weekday(t, WEEKDAYS[m["day"]], m["mod"] or "", s),
    ),
    _rule(
        rf"(?:(?P<prep>in|during|of|by|until|till|before|after|for)\s+)?(?:(?P<part>early|mid|late|middle\s+of|end\s+of)[\s-]+)?"
        rf"(?:(?P<mod>this|next|last|past|coming)\s+)?(?P<month>{FULL_MONTH})(?:,?\s+(?P<year>\d{{4}}))?",
        _month_rule,
    ),
    _rule(
        r"(?:the\s+)?(?P<unit>week|weekend|month|year)\s+(?P<way>before\s+last|after\s+next"
        r"|(?:after|before)\s+this(?:\s+one|(?!\s+[a-z])))",  # "the weekend after this one": the next
        lambda m, t, s: days.unit_window(t, m["unit"], _STEPS[" ".join(m["way"].split()[:2])]),
    ),
    _rule(
        r"(?:(?:around|about)\s+)?this\s+time\s+last\s+year",
        lambda m, t, s: days.around(days.a_year_before(t), 7),
    ),
    _rule(
        r"(?P<n>a\s+week|a\s+fortnight|two\s+weeks)\s+(?P<from>today|tomorrow)",  # "a week today"
        lambda m, t, s: days.one(
            t + timedelta(days=_WEEKS_ON[" ".join(m["n"].split())] + (m["from"] != "today"))
        ),
    ),
    _rule(  # "a week on Saturday": the Saturday after the coming one
        rf"a\s+week\s+on\s+(?P<day>{WEEKDAY})",
        lambda m, t, s: days.shifted(_weekday(t, WEEKDAYS[m["day"]], "", Tense.FUTURE), 7),
    ),
    _rule(
        rf"(?:on\s+)?(?:the\s+)?(?P<day>{WEEKDAY})\s+before\s+last",
        lambda m, t, s: days.shifted(_weekday(t, WEEKDAYS[m["day"]], "last", Tense.PAST), -7),
    ),
    _rule(
        r"(?:(?P<prep>in|during|over|for|around|at|on)\s+)?(?:the\s+)?"
        r"(?:(?P<mod>this\s+past|this|next|last|past|coming)\s+)?"
        rf"(?:(?P<season>{_SEASON})(?!\s+(?:{named.SEASON_NOUNS}){WORD_END})|(?P<holiday>{_HOLIDAY}))"
        r"(?:\s+(?:of\s+)?(?P<year>\d{4}))?",
        _named,
        may_be_due=False,  # "the Christmas tree is in the attic" places a memory, is not due then
    ),
    _rule(r"(?P<n>" + NUMBER + r")\s+" + UNIT.replace("(", "(?P<unit>", 1) + r"\s+(?P<ago>ago)", _ago),
    _rule(r"in\s+(?P<n>" + NUMBER + r")\s+" + UNIT.replace("(", "(?P<unit>", 1) + r"(?P<ago>)", _ago),
    _rule(rf"(?P<n>{NUMBER})\s+{UNIT.replace('(', '(?P<unit>', 1)}\s+from\s+(?:today|now)(?P<ago>)", _ago),
    _rule(
        r"(?:(?:the|in\s+the)\s+)?(?P<dir>past|last|next|coming|within)\s+(?:the\s+)?(?P<n>"
        + NUMBER
        + r")\s+"
        + UNIT.replace("(", "(?P<unit>", 1),
        _span,
    ),
    _rule(
        r"(?:(?:in|during|of|since|by)\s+(?:the\s+year\s+)?|the\s+year\s+)(?P<y>(?:19|20)\d{2})",
        lambda m, t, s: days.year_window(int(m["y"])),
        vague=True,
    ),
    _rule(
        r"recent(?:ly)?|lately|these\s+days|the\s+other\s+day",
        lambda m, t, s: Window(t - timedelta(days=VAGUE_DAYS), t),
        vague=True,
    ),
    _rule(
        r"upcoming|coming\s+up|soon|in\s+the\s+(?:near\s+)?future|(?:the\s+)?days\s+ahead|next\s+few\s+days",
        lambda m, t, s: Window(t, t + timedelta(days=VAGUE_DAYS)),
        vague=True,
    ),
]
_SINCE = re.compile(r"\b(?:since|from)\s+$")  # whole words: "still a week", "hobby Friday" are not
_UNTIL = re.compile(r"\b(?:until|till|by|before)\s+$")


def _lowered(text: str) -> str:
    """Lower case, one character for one character (so spans index the original text)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def find(text: str, today: date, tense: Tense | None = None) -> list[Found]:
    """The expressions in `text`, in order, none overlapping (the longest wins where two do)."""
    lowered = _lowered(text)
    tense = tense or tense_of(lowered)
    candidates: list[tuple[int, int, _Rule, re.Match[str]]] = []
    for rule in _RULES:
        for match in rule.pattern.finditer(lowered):
            candidates.append((match.start(), match.end(), rule, match))
    candidates.sort(key=lambda c: (c[0], -(c[1] - c[0])))
    found: list[Found] = []
    reached = 0
    for start, end, rule, match in candidates:
        if start < reached:
            continue
        before = lowered[max(0, start - 8) : start]
        since, until = _SINCE.search(before), _UNTIL.search(before)
        # "since October" is the last October, "until Friday" the next Friday, whatever the tense
        window = rule.resolve(match, today, Tense.PAST if since else Tense.FUTURE if until else tense)
        if window is None:
            continue
        if since is not None and window.start <= today:
            window, start = Window(window.start, today), start - len(since[0])
        elif until is not None and window.end >= today:
            window, start = Window(today, window.end), start - len(until[0])
        found.append(Found(start, end, window, rule.vague, rule.may_be_due))
        reached = end
    return found
