"""make run's scheduler: the template's Schedule events, on their rates."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from infra import local_schedule


def test_rates_the_template_uses_are_read() -> None:
    assert local_schedule.rate_seconds("rate(15 minutes)") == 900
    assert local_schedule.rate_seconds("rate(1 hour)") == 3600
    assert local_schedule.rate_seconds("rate(2 days)") == 172800
    with pytest.raises(ValueError, match="unsupported"):
        local_schedule.rate_seconds("cron(0 * * * ? *)")


def test_every_scheduled_function_of_the_template_is_found() -> None:
    found = {job.function: job.period for job in local_schedule.scheduled_functions()}
    assert found["ExpirySweepFunction"] == 900
    assert found["ExpiringEventsFunction"] == 3600


def test_each_job_runs_on_its_period_with_a_scheduled_event(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a period of a few milliseconds, and handlers that only note their event
    monkeypatch.setenv("SYNAPSE_LOCAL_SCHEDULE_SECONDS", "0.01")
    ran: list[str] = []
    both = threading.Event()

    def run_once(job: local_schedule.Scheduled) -> None:
        event = local_schedule.scheduled_event(job, datetime.now(UTC))
        assert event["detail-type"] == "Scheduled Event"
        ran.append(job.function)
        if {"ExpirySweepFunction", "ExpiringEventsFunction"} <= set(ran):
            both.set()

    monkeypatch.setattr(local_schedule, "run_once", run_once)
    stop = threading.Event()
    # When the scheduler runs
    thread = local_schedule.start(stop)
    # Then every scheduled function runs, until it is stopped
    assert both.wait(10)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
