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
