"""What the runner prints per request (issue 21, item 9): by default one access line, `synapse-local:
METHOD PATH STATUS ms`, and nothing else (the handlers' INFO logs and metric lines stay quiet, their
warnings and errors do not); `SYNAPSE_LOCAL_LOG=json` prints the handlers' JSON logs and metrics as
Lambda does. That `make demo`'s `export BASE=… MIND_ID=… MIND_KEY=…` line is the last one it prints,
under one access line per request, is checked on test_demo.py's first start (a start and a seeding
fewer than a runner of its own here). The runners here keep their tables in the test process's shared
DynamoDB Local (`shared_store`): what a runner prints per request does not depend on where its store
runs, and each is spared a JVM start."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import ACCESS_LINE, SETTLE_SECONDS, RunningService, SharedStore, start_runner


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
    while len(service.after_banner()) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(SETTLE_SECONDS)
    return service.after_banner()


def test_by_default_each_request_prints_one_access_line_and_nothing_else(
    tmp_path: Path, shared_store: SharedStore
) -> None:
    # Given a runner started as `make run` starts it (its tables in the shared store)
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env=shared_store.env("logs"))
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


def test_synapse_local_log_json_prints_the_handlers_json_logs_and_metrics_too(
    tmp_path: Path, shared_store: SharedStore
) -> None:
    # Given a runner asked for the handlers' own logs
    settings = shared_store.env("json-logs") | {"SYNAPSE_LOCAL_LOG": "json"}
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env=settings)
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
