"""`make run`'s EventBridge: every function template.yaml gives a `Schedule` event runs on that rate.

`rate(15 minutes)` / `rate(1 hour)` / `rate(1 day)` (the forms the template uses) are read from the
template, so a new scheduled function runs locally with no change here. Each gets the event
EventBridge sends (`Scheduled Event`) and a Lambda context, the first time one period after start.
`SYNAPSE_LOCAL_SCHEDULE_SECONDS` replaces every period (tests, or to watch the sweep work).
A failing run is logged and tried again next period, as EventBridge would.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra import template

log = logging.getLogger("synapse.local.schedule")
_UNITS = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}
_RATE = re.compile(r"rate\((\d+) (minutes?|hours?|days?)\)")


def rate_seconds(expression: str) -> float:
    """Seconds between runs of a `rate(...)` expression (cron expressions are not used here)."""
    found = _RATE.fullmatch(expression.strip())
    if not found:
        raise ValueError(f"unsupported schedule expression {expression!r}: use rate(N minutes|hours|days)")
    return int(found[1]) * _UNITS[found[2]]


@dataclass(frozen=True)
class Scheduled:
    function: str
    code_dir: Path
    handler: str
    rule: str
    period: float


def scheduled_functions() -> list[Scheduled]:
    """Every (function, Schedule event) of template.yaml."""
    default_handler = template.load()["Globals"]["Function"]["Handler"]
    found = []
    for name, resource in template.resources("AWS::Serverless::Function").items():
        properties = resource["Properties"]
        for rule, event in (properties.get("Events") or {}).items():
            if event["Type"] == "Schedule":
                found.append(
                    Scheduled(
                        name,
                        template.ROOT / properties["CodeUri"],
                        str(properties.get("Handler") or default_handler),
                        rule,
                        rate_seconds(event["Properties"]["Schedule"]),
                    )
                )
    return found


def scheduled_event(job: Scheduled, at: datetime) -> dict[str, Any]:
    region = os.environ.get("AWS_REGION", "us-east-1")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:000000000000:rule/local-{job.function}{job.rule}"],
        "detail": {},
    }


def run_once(job: Scheduled) -> Any:
    from infra.gateway import LambdaContext, load_handler

    handler: Callable[[dict[str, Any], Any], Any] = load_handler(job.code_dir, job.handler)
    return handler(scheduled_event(job, datetime.now(UTC)), LambdaContext(job.function))


def start(stop: threading.Event) -> threading.Thread:
    """Run every scheduled function on its period in one daemon thread until `stop` is set."""
    override = os.environ.get("SYNAPSE_LOCAL_SCHEDULE_SECONDS", "").strip()
    jobs = scheduled_functions()
    periods = {job.function + job.rule: float(override) if override else job.period for job in jobs}
    due = {key: time.monotonic() + period for key, period in periods.items()}

    def loop() -> None:
        while not stop.is_set():
            for job in jobs:
                key = job.function + job.rule
                if time.monotonic() >= due[key] and not stop.is_set():
                    due[key] = time.monotonic() + periods[key]
                    try:
                        log.info("schedule: %s ran: %s", job.function, run_once(job))
                    except Exception:
                        log.exception("schedule: %s failed; it runs again next period", job.function)
            stop.wait(min([1.0, *periods.values()]))

    thread = threading.Thread(target=loop, name="synapse-schedule", daemon=True)
    thread.start()
    return thread
