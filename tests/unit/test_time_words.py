"""Reading time (issue 42 items 5-6, docs/time.md): a question's time expressions as a window of
days relative to a fixed now in the asker's zone, the days a memory's content is about, and the
`now=`/`tz=` parameters. Now is Thursday 2026-12-03 10:00 UTC throughout."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synapse.search import in_time
from synapse.search.query import parse_query
from synapse.when import zones
from synapse.when.content import DayAbout, content_days, days_about
from synapse.when.grammar import find
from synapse.when.questions import read_question
from synapse.when.vocabulary import MONTHS, NUMBERS, WEEKDAYS
from synapse.when.words import may_name_time

ROOT = Path(__file__).resolve().parents[2]

NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # a Thursday

WINDOWS = [
    # days
    ("What is on today?", "2026-12-03", "2026-12-03"),
    ("Anything tomorrow?", "2026-12-04", "2026-12-04"),
    ("What happened yesterday?", "2026-12-02", "2026-12-02"),
    ("the day after tomorrow", "2026-12-05", "2026-12-05"),
    ("What happened 3 days ago?", "2026-11-29", "2026-12-01"),
    ("a couple of weeks ago", "2026-11-16", "2026-11-22"),
    ("in 3 days", "2026-12-05", "2026-12-07"),
    # weeks (Monday to Sunday), weekends, weekdays
    ("What is coming up next week?", "2026-12-07", "2026-12-13"),
    ("What did we discuss this week?", "2026-11-30", "2026-12-06"),
    ("What did I do last week?", "2026-11-23", "2026-11-29"),
    ("What happened the past week?", "2026-11-26", "2026-12-03"),
    ("plans for the weekend", "2026-12-05", "2026-12-06"),
    ("What did I do last weekend?", "2026-11-28", "2026-11-29"),
    ("next weekend", "2026-12-12", "2026-12-13"),
    ("What is on Friday?", "2026-12-04", "2026-12-04"),
    ("What happened on Monday?", "2026-11-30", "2026-11-30"),
    ("next Tuesday", "2026-12-08", "2026-12-08"),
    ("last Friday", "2026-11-27", "2026-11-27"),
    # months and years, past or future by the question's tense
    ("What is planned this month?", "2026-12-01", "2026-12-31"),
    ("next month", "2027-01-01", "2027-01-31"),
    ("What happened last month?", "2026-11-01", "2026-11-30"),
    ("What is happening in October?", "2027-10-01", "2027-10-31"),
    ("What did we do in October?", "2026-10-01", "2026-10-31"),
    ("in May", "2027-05-01", "2027-05-31"),
    ("early January", "2027-01-01", "2027-01-10"),
    ("last year", "2025-01-01", "2025-12-31"),
    ("What did I do in 2025?", "2025-01-01", "2025-12-31"),
    ("since October", "2026-10-01", "2026-12-03"),
    # dates
    ("Dec 9", "2026-12-09", "2026-12-09"),
    ("What happened on Dec 9?", "2025-12-09", "2025-12-09"),
    ("14 December 2026", "2026-12-14", "2026-12-14"),
    ("What is on 2026-12-14?", "2026-12-14", "2026-12-14"),
    ("on the 9th", "2026-12-09", "2026-12-09"),
    ("January 5", "2027-01-05", "2027-01-05"),
    # vague
    ("What happened recently?", "2026-11-19", "2026-12-03"),
    ("upcoming appointments", "2026-12-03", "2026-12-17"),
    # several: the days both name
    ("What is coming up next week?", "2026-12-07", "2026-12-13"),
    ("What did we do for Christmas last year?", "2025-12-25", "2025-12-25"),
    # a direction gives way to a precise time it shares no day with
    ("Anything coming up in October?", "2027-10-01", "2027-10-31"),
    # numeric dates where the order is plain; dots are day first
    ("check-up on 13/05/27", "2027-05-13", "2027-05-13"),
    ("due 12/24/2026", "2026-12-24", "2026-12-24"),
    ("Termin am 14.12.2026", "2026-12-14", "2026-12-14"),
    # one before the last, fortnights
    ("What did I do the week before last?", "2026-11-16", "2026-11-22"),
    ("the weekend before last", "2026-11-21", "2026-11-22"),
    ("the month before last", "2026-10-01", "2026-10-31"),
    ("Where was I on the Saturday before last?", "2026-11-21", "2026-11-21"),
    ("the week after next", "2026-12-14", "2026-12-20"),
    ("the weekend after next", "2026-12-19", "2026-12-20"),
    ("What am I doing the weekend after this one?", "2026-12-12", "2026-12-13"),
    ("What's happening a week on Saturday?", "2026-12-12", "2026-12-12"),
    ("three weeks from today", "2026-12-21", "2026-12-27"),
    ("Where will I be on Friday 7 April?", "2027-04-07", "2027-04-07"),  # the weekday is no second time
    ("What's booked for 20/03?", "2027-03-20", "2027-03-20"),
    ("the week before this one", "2026-11-23", "2026-11-29"),
    ("What was I doing around this time last year?", "2025-11-26", "2025-12-10"),
    ("Is the review still a week today?", "2026-12-10", "2026-12-10"),  # "still" is not "till"
    ("my hobby on Friday", "2026-12-04", "2026-12-04"),  # nor "hobby" "by"
    ("a fortnight tomorrow", "2026-12-18", "2026-12-18"),
    ("a fortnight ago", "2026-11-16", "2026-11-22"),
    ("over the past fortnight", "2026-11-19", "2026-12-03"),
    ("What's coming up later this week, after today?", "2026-12-04", "2026-12-06"),
    ("What happened a year ago this week?", "2025-12-01", "2025-12-07"),
    ("What did I do two years ago today?", "2024-12-03", "2024-12-03"),
    # seasons (northern, whole months; winter by the year it starts in) and holidays
    ("Kitchen renovation planned for next summer", "2027-06-01", "2027-08-31"),
    ("What did we do last summer?", "2026-06-01", "2026-08-31"),
    ("this past summer", "2026-06-01", "2026-08-31"),
    ("Where are we going this winter?", "2026-12-01", "2027-02-28"),
    ("in the fall", "2027-09-01", "2027-11-30"),
    ("the summer of 2025", "2025-06-01", "2025-08-31"),
    ("winter 2025", "2025-12-01", "2026-02-28"),
    ("plans for Christmas", "2026-12-25", "2026-12-25"),
    ("We spent Christmas at mum's", "2025-12-25", "2025-12-25"),
    ("New Year\u2019s Eve", "2026-12-31", "2026-12-31"),
    ("What did we do at Easter?", "2026-04-05", "2026-04-05"),
    ("Thanksgiving 2025", "2025-11-27", "2025-11-27"),
    ("What are we doing over the Christmas holidays?", "2026-12-24", "2027-01-01"),
    ("the Easter weekend", "2027-03-26", "2027-03-29"),
    ("next Thanksgiving", "2027-11-25", "2027-11-25"),
]


@pytest.mark.parametrize(("question", "start", "end"), WINDOWS)
def test_a_time_expression_reads_as_a_window_of_days(question: str, start: str, end: str) -> None:
    # Given a question and a fixed now, When its time is read
    found = read_question(question, NOW, UTC)
    # Then it names the window the rules say (and the cheap check let the grammar read it)
    assert found.window is not None, question
    assert may_name_time(question)
    assert (found.window.start.isoformat(), found.window.end.isoformat()) == (start, end)


@pytest.mark.parametrize(
    "question",
    [
        "Did he fall?",
        "Invoice 03/12/2026",
        "upgrade to 1.2.10",
        "spring cleaning",
        "the fall of Rome",
        "Where is the family going over spring break?",  # a week nobody dated, not March to May
        "Where is my winter coat?",
        "Is summer camp booked?",
        "Summer was lovely",  # a season alone: a word, not three months
        "What happened the week after this trip?",  # "this" of a thing, not of a week
        "Is the 24/7 support line still open?",  # a day and month with no year: after a preposition only
        "Add 3/4 cup of flour",
        "What happened on 4/3?",  # 4 March or 3 April: not guessed
        "Where does he live now?",
        "What may he eat?",
        "Is march madness on?",
        "Who is June?",
        "Mondays are for the gym",
    ],
)
def test_words_that_only_look_like_time_are_not_read(question: str) -> None:
    assert read_question(question, NOW, UTC).window is None


def test_the_time_words_leave_the_question_and_the_rest_is_searched() -> None:
    # Given a question with a time expression and a word of its own
    timed = in_time.read("dentist next week", parse_query("dentist next week"), NOW, UTC)
    # Then its words are the rest ("next" and "week" are not searched as words)
    assert timed.query.terms == ["dentist"]
    assert timed.window is not None and timed.window.start == date(2026, 12, 7)
    # And the names of months and weekdays stay words too ("every March" matches them as written)
    named = in_time.read("dentist in March", parse_query("dentist in March"), NOW, UTC)
    assert named.query.terms == ["dentist", "march"] and named.window is not None
    # And so do seasons and holidays, whole ("New Year's Eve" matches as written), not "next"
    for asked, words in [
        ("trip next summer", ["trip", "summer"]),
        ("Christmas Eve dinner", ["christmas", "eve", "dinner"]),
        ("Where did Nadia spend New Year's Eve?", ["nadia", "spend", "new", "year", "eve"]),
    ]:
        season = in_time.read(asked, parse_query(asked), NOW, UTC)
        assert season.query.terms == words and season.window is not None, asked
    # And a question of time and function words only has no words left to search
    only_time = in_time.read("What is coming up next week?", parse_query("x"), NOW, UTC)
    assert only_time.query.terms == [] and only_time.window is not None


def test_explicit_syntax_keeps_its_exact_meaning() -> None:
    raw = '"next week" OR tomorrow'
    timed = in_time.read(raw, parse_query(raw), NOW, UTC)
    assert timed.window is None and "next week" in timed.query.terms


def test_the_askers_zone_decides_which_day_it_is() -> None:
    # Given 23:30 UTC on Monday 7 December, which is already Tuesday in Berlin and still Monday in New York
    late = datetime(2026, 12, 7, 23, 30, tzinfo=UTC)
    berlin = read_question("What is on today?", late, ZoneInfo("Europe/Berlin")).window
    new_york = read_question("What is on tomorrow?", late, ZoneInfo("America/New_York")).window
    # Then "today" in Berlin is the 8th, and "tomorrow" in New York is the 8th too
    assert berlin is not None and berlin.start == date(2026, 12, 8)
    assert new_york is not None and new_york.start == date(2026, 12, 8)
    # And at UTC "today" is still the 7th
    utc = read_question("What is on today?", late, UTC).window
    assert utc is not None and utc.start == date(2026, 12, 7)


def test_dates_in_content_are_read_relative_to_when_it_was_written() -> None:
    written = date(2026, 12, 1)  # a Tuesday
    assert content_days("Dentist on 2026-12-14", written) == [date(2026, 12, 14)]
    assert content_days("Dentist on Dec 9 at 14:30", written) == [date(2026, 12, 9)]
    assert content_days("Team offsite next Tuesday", written) == [date(2026, 12, 8)]
    assert content_days("Car service tomorrow", written) == [date(2026, 12, 2)]
    assert content_days("Trip in October", written)[0] == date(2027, 10, 1)
    assert len(content_days("Trip in October", written)) == 31
    # Vague words and whole years say nothing about a day
    assert content_days("Recently started Portuguese; planned for 2027", written) == []
    assert content_days("Kitchen renovation planned for next summer", written) == []
    # And a holiday in a memory places it on that day but is not due then ("the Christmas tree"
    # names a thing as often as a day); a season is longer than a month: it places nothing
    assert days_about("The Christmas tree is in the attic", "2026-12-01T09:00:00Z", None) == [
        DayAbout("2026-12-25", False)
    ]
    assert content_days("Cottage booked for next summer", written) == []


def test_a_memory_is_about_its_occurred_at_day_and_its_contents_dates() -> None:
    days = days_about("Call the bank tomorrow", "2026-11-30T08:00:00.000Z", "2026-11-20")
    assert days == [("2026-11-20", True), ("2026-12-01", True)]
    # A timestamp occurred_at is also when the words were said: "tomorrow" counts from it
    said = days_about("Call the bank tomorrow", "2026-11-30T08:00:00.000Z", "2026-11-10T09:00:00Z")
    assert [d.day for d in said] == ["2026-11-10", "2026-11-11"]
    assert days_about("No dates here", None, None) == []


def test_a_range_of_days_is_each_of_its_days() -> None:
    written = date(2027, 10, 20)
    # Given ranges written with a dash, an en dash or words, before or after the month
    assert content_days("Congress in Lisbon, 25\u201326 November", written) == [
        date(2027, 11, 25),
        date(2027, 11, 26),
    ]
    assert content_days("Quinta booked for the weekend of 27-28 November", written) == [
        date(2027, 11, 27),
        date(2027, 11, 28),
    ]
    assert len(content_days("Cottage from 10 to 17 July", written)) == 8
    assert content_days("Ski week Feb 7 to 9, 2028", written) == [date(2028, 2, d) for d in (7, 8, 9)]
    assert len(content_days("Cottage booked from 2027-07-10 to 2027-07-17", written)) == 8
    # But not numbers that are no days of a month, nor a range running backwards
    assert content_days("Invoice due in 10-12 days", written) == []
    assert content_days("Dec 30-2", written) == [date(2027, 12, 30)]


def test_what_happened_without_a_day_is_about_the_day_it_was_written_a_fact_about_none() -> None:
    written = "2027-11-09T13:00:00Z"
    # Given a memory telling, in the past tense, what happened, naming no day: that day, not due
    assert days_about("Got my flu jab at the health centre", written, None) == [DayAbout("2027-11-09", False)]
    assert days_about("Blood test results came back fine", written, None) == [DayAbout("2027-11-09", False)]
    # But a fact, a plan or a need is about no day; nor is a memory that names its own
    assert days_about("Lives in Porto, near the river", written, None) == []
    assert days_about("Need a new bed; speed up the move", written, None) == []
    assert [d.day for d in days_about("Visited Anna on 2027-11-02", written, None)] == ["2027-11-02"]


def test_a_day_is_due_when_named_on_its_own_not_as_a_day_of_a_longer_span() -> None:
    # Given a memory written on Monday 30 November
    written = "2026-11-30T08:00:00.000Z"
    # Then "this week" places it on each day of the week, none of them due
    week = days_about("Reviewing the docs pull request this week", written, None)
    assert len(week) == 7 and not any(d.due for d in week)
    # And a weekend or a named day is due, as is a day a span also holds
    assert all(d.due for d in days_about("Hiking this weekend", written, None))
    both = dict(days_about("Sprint this week; demo on Dec 3", written, None))
    assert both["2026-12-03"] is True and both["2026-12-01"] is False


def test_now_and_tz_are_read_or_refused_naming_the_parameter() -> None:
    berlin = zones.zone_of("Europe/Berlin")
    assert zones.moment_of("2026-12-03T10:00:00+01:00", berlin, None) == datetime(2026, 12, 3, 9, tzinfo=UTC)
    assert zones.moment_of("2026-12-03", berlin, None) == datetime(2026, 12, 3, 11, tzinfo=UTC)
    assert zones.zone_of(None) is UTC
    for raw_zone in ("Mars/Olympus", "../etc/passwd", ""):
        with pytest.raises(zones.BadClock) as refused:
            zones.zone_of(raw_zone)
        assert refused.value.field == "tz"
    for raw_now in ("yesterday", "2026-12-03T10:00:00", "2026-13-03", "9999-12-31T23:59:59Z", "0001-01-01"):
        with pytest.raises(zones.BadClock) as refused:
            zones.moment_of(raw_now, UTC, None)
        assert refused.value.field == "now"


# Words the grammar's rules are made of, and some that are not: generated texts mix them with
# characters whose lower case is an ASCII letter (the Kelvin sign, a capital I with a dot) and digits
# of other scripts, to hold the cheap check to the grammar where it is easiest to break.
_PIECES = [
    *MONTHS, *WEEKDAYS, *NUMBERS, "day", "days", "week", "weeks", "month", "year", "weekend", "today",
    "tonight", "tomorrow", "yesterday", "morning", "afternoon", "evening", "night", "ago", "in", "on",
    "the", "of", "next", "last", "this", "past", "coming", "up", "upcoming", "recently", "lately",
    "soon", "future", "near", "ahead", "few", "other", "these", "since", "until", "early", "mid",
    "late", "end", "before", "fortnight", "summer", "fall", "spring", "winter", "christmas", "eve",
    "new", "year's", "st", "easter", "2026-12-14", "9th", "14", "2025", "\u0663", "dentist", "coffee",
    "WEE\u212a", "\u0130", "-", ",", ".", "?",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=6), st.sampled_from([" ", "  ", "\n", "-"]))
def test_the_cheap_check_never_skips_a_text_the_grammar_reads(pieces: list[str], joint: str) -> None:
    # Given a text made of time words and others
    text = joint.join(pieces)
    # When the grammar finds an expression in it
    found = find(text, NOW.date())
    # Then the cheap check had said it may name a time (it is looser than the grammar, never stricter)
    assert not found or may_name_time(text), text


@pytest.mark.parametrize(
    "text",
    [
        "next WEE\u212a",
        "on \u0662\u0660\u0662\u0666-\u0661\u0662-\u0661\u0664",
        "on the \u0669th",
        "DEC 9",
        "TONIGHT",
    ],
)
def test_the_cheap_check_reads_what_the_grammar_reads_in_other_cases_and_digits(text: str) -> None:
    # Given a time expression written with a Kelvin sign for its k, in Arabic-Indic digits, in capitals
    # Then the grammar reads it, and the cheap check lets it
    assert find(text, NOW.date()) and may_name_time(text)


@pytest.mark.parametrize("question", ["What coffee does he drink?", "Who is his partner?", "Wife's name"])
def test_a_question_without_time_words_is_not_read_by_the_grammar(question: str) -> None:
    assert not may_name_time(question)
    assert in_time.read(question, parse_query(question), NOW, UTC).window is None


def test_the_grammar_loads_with_the_first_question_that_may_name_a_time() -> None:
    # Given a fresh interpreter that has read a question without a time word
    code = (
        "import sys; from datetime import UTC, datetime; from synapse.search import in_time;"
        " from synapse.search.query import parse_query; now = datetime(2026, 12, 3, tzinfo=UTC);"
        " in_time.read('his coffee', parse_query('his coffee'), now, UTC);"
        " print('synapse.when.grammar' in sys.modules);"
        " in_time.read('coffee next week', parse_query('coffee next week'), now, UTC);"
        " print('synapse.when.grammar' in sys.modules)"
    )
    done = subprocess.run(  # noqa: S603 - the test's own interpreter, fixed code
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(ROOT / "layers" / "synapse")},
        capture_output=True,
        text=True,
        check=True,
    )
    # Then the grammar was not loaded by it, and is by the first question naming a time
    assert done.stdout.split() == ["False", "True"]
