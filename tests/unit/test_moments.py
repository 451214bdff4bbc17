"""Event time as clients write it (`core.moments`): what a date and a timestamp become, what is
refused and why, and which memories a window holds (pure)."""

from __future__ import annotations

import pytest
from synapse.core import moments
from synapse.core.moments import Window


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("2026-12-09", "2026-12-09"),
        ("2026-12-09T14:30:00Z", "2026-12-09T14:30:00.000Z"),
        ("2026-12-09T14:30:00.123456+02:00", "2026-12-09T12:30:00.123Z"),
        ("2026-12-09 23:30-01:00", "2026-12-10T00:30:00.000Z"),
        ("1999-01-01", "1999-01-01"),
    ],
)
def test_a_date_stays_a_date_and_a_timestamp_becomes_utc(written: str, stored: str) -> None:
    assert moments.parse(written) == stored


@pytest.mark.parametrize(
    ("written", "rule"),
    [
        ("2026-12-09T14:30:00", "timezone"),
        ("2026-02-30", "format"),
        ("20261209", "format"),
        ("tomorrow", "format"),
        ("", "format"),
        ("0001-01-01T00:30:00+01:00", "range"),
    ],
)
def test_what_is_neither_is_refused_with_its_rule(written: str, rule: str) -> None:
    with pytest.raises(moments.NotAMoment) as refused:
        moments.parse(written)
    assert refused.value.rule == rule


def test_a_window_of_dates_holds_whole_days_and_a_dated_memory_overlapping_it() -> None:
    # Given the window of one day, given as dates
    day = Window.of("2026-12-09", "2026-12-09")
    assert day == Window("2026-12-09T00:00:00.000Z", "2026-12-09T23:59:59.999Z")
    # Then it holds what was stored that day, or is about it, and nothing else
    assert day.holds(None, "2026-12-09T23:59:59.999Z")
    assert not day.holds(None, "2026-12-10T00:00:00.000Z")
    assert day.holds("2026-12-09", "2026-01-01T00:00:00.000Z")
    assert not day.holds("2026-12-08", "2026-12-09T10:00:00.000Z")  # occurred_at wins over created_at
    # And a window from noon still holds a memory about that day (a date is its whole day)
    from_noon = Window("2026-12-09T12:00:00.000Z", None)
    assert from_noon.holds("2026-12-09", "2000-01-01T00:00:00.000Z")
    assert not from_noon.holds("2026-12-09T11:59:59.999Z", "2000-01-01T00:00:00.000Z")
