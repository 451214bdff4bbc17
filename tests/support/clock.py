"""A clock tests can move: every `clock.now()` is one second after the last, from a fixed start.

Ordering tests then depend on the order of writes, not on how fast the machine is.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from synapse.core import clock

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(name="ticking_clock")
def ticking_clock_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    ticks = itertools.count()
    lock = threading.Lock()

    def now() -> datetime:
        with lock:
            return START + timedelta(seconds=next(ticks))

    monkeypatch.setattr(clock, "now", now)
    yield


@pytest.fixture(name="frozen_clock")
def frozen_clock_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every `clock.now()` is the same instant: writes land in one millisecond."""
    monkeypatch.setattr(clock, "now", lambda: START)
    yield


class MovableClock:
    """A clock that stands still until the test moves it."""

    def __init__(self, start: datetime = START) -> None:
        self.at = start

    def now(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


@pytest.fixture(name="movable_clock")
def movable_clock_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[MovableClock]:
    """`clock.now()` stands at START until the test calls `movable_clock.advance(seconds=…)`."""
    moving = MovableClock()
    monkeypatch.setattr(clock, "now", moving.now)
    yield moving


EXPIRY_START = datetime(2026, 11, 30, 8, 0, 0, tzinfo=UTC)


@pytest.fixture(name="moved")
def moved_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[MovableClock]:
    """`clock.now()` stands at EXPIRY_START until a test moves it: expiry boundaries to the millisecond."""
    moving = MovableClock(EXPIRY_START)
    monkeypatch.setattr(clock, "now", moving.now)
    yield moving
