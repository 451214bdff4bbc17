"""What the runner prints per request (issue 21, item 9): by default one access line, `synapse-local:
METHOD PATH STATUS ms`, and nothing else (the handlers' INFO logs and metric lines stay quiet, their
warnings and errors do not); `SYNAPSE_LOCAL_LOG=json` prints the handlers' JSON logs and metrics as
Lambda does. `make demo`'s `export BASE=… MIND_ID=… MIND_KEY=…` line is the last one it prints."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import RunningService, start_runner

ACCESS_LINE = re.compile(r"^synapse-local: [A-Z]+ /\S* \d{3} \d+\.\dms$")
BANNER_END = "Stop with Ctrl+C (data is saved)."
EXPORT_LINE = re.compile(r"^export BASE=\S+ MIND_ID=\S+ MIND_KEY=\S+$")
SETTLE_SECONDS = 2.0  # the stream pump polls every 0.3 s: what it would print is out by then


def after_banner(service: RunningService) -> list[str]:
    """The lines printed after the start banner."""
    output = service.output()
    assert BANNER_END in output, output
    return [line for line in output.split(BANNER_END, 1)[1].splitlines() if line.strip()]


def some_requests(service: RunningService) -> int:
    """A mind, a memory stored and found by search, a 401, a 404, a 405; returns how many were sent."""
    http = Http(service.url)
    mind = http.create_mind(service.jwt)
    answers = [
        http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Logged once")),
        http.call("GET", "/memory"),
        http.call("GET", "/nothing/here"),
        http.call("PATCH", "/memory", token=mind.key),
    ]
    assert [a.status_code for a in answers] == [201, 401, 404, 405], [a.text for a in answers]
    sent = 1 + len(answers)
    for _ in range(50):  # until the stream pump has indexed it (the indexer ran, and logged nothing)
        sent += 1
        if http.call("GET", "/memory/search", token=mind.key, params={"q": "logged"}).json()["results"]:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("never indexed")
    return sent


def wait_for_lines(service: RunningService, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while len(after_banner(service)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(SETTLE_SECONDS)
    return after_banner(service)


def test_by_default_each_request_prints_one_access_line_and_nothing_else(tmp_path: Path) -> None:
    # Given a runner started as `make run` starts it
    service = start_runner(tmp_path / "data", tmp_path / "runner.log")
    try:
        # When it serves requests of every kind, and indexes what they stored
        sent = some_requests(service) + 1  # and the GET / start_runner sent to see it answer
        lines = wait_for_lines(service, sent)
    finally:
        assert service.stop() == 0, service.output()
    # Then it printed one access line per request, and nothing else
    assert [line for line in lines if not ACCESS_LINE.match(line)] == []
    assert len(lines) == sent, lines
    assert "synapse-local: POST /memory 201 " in "\n".join(lines)


def test_synapse_local_log_json_prints_the_handlers_json_logs_and_metrics_too(tmp_path: Path) -> None:
    # Given a runner asked for the handlers' own logs
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env={"SYNAPSE_LOCAL_LOG": "json"})
    try:
        sent = some_requests(service) + 1
        lines = wait_for_lines(service, sent)
    finally:
        assert service.stop() == 0, service.output()
    # Then beside the access lines come powertools' JSON lines: a "Handled" log per API request
    # naming its route and status, and the CloudWatch metric lines, as on AWS
    access = [line for line in lines if ACCESS_LINE.match(line)]
    records = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(access) == sent
    handled = [r for r in records if r.get("message") == "Handled"]
    assert {"route": "POST /memory", "status": 201}.items() <= next(
        r for r in handled if r.get("route") == "POST /memory"
    ).items()
    assert len(handled) == sent
    assert any("_aws" in r for r in records)


def test_an_unknown_log_format_is_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="SYNAPSE_LOCAL_LOG must be access or json") as refused:
        started = start_runner(tmp_path / "data", tmp_path / "runner.log", env={"SYNAPSE_LOCAL_LOG": "yaml"})
        started.stop()  # reached only when the value was not refused: leave no runner behind
    assert "exited with 2" in str(refused.value)


def test_the_demo_prints_its_export_line_last_under_one_line_per_request(tmp_path: Path) -> None:
    # Given `make demo` (SYNAPSE_DEMO=1) on a fresh data dir, its log left as it is by default
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env={"SYNAPSE_DEMO": "1"})
    try:
        deadline = time.monotonic() + 60
        while not any(map(EXPORT_LINE.match, after_banner(service))) and time.monotonic() < deadline:
            time.sleep(0.1)
        # When it has seeded the mind and indexed it (nothing else was asked of it)
        time.sleep(SETTLE_SECONDS)
        lines = after_banner(service)
    finally:
        assert service.stop() == 0, service.output()
    # Then the line to paste is the last one printed, after the demo's few lines
    assert EXPORT_LINE.match(lines[-1]), lines
    demo = next(i for i, line in enumerate(lines) if line.startswith("Demo mind (created; stored 12"))
    assert len(lines) - demo <= 4, lines[demo:]
    # And before them, one access line per request its seeding sent (and the start's GET /)
    assert [line for line in lines[:demo] if not ACCESS_LINE.match(line)] == []
    assert len(lines[:demo]) < 25, lines[:demo]
