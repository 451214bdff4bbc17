"""The one entry-point decorator: metrics flushed when an invocation counted something, nothing
written when it counted nothing, and no logger key carried into the next invocation."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import warnings
from typing import Any

import pytest
from aws_lambda_powertools import Tracer
from aws_lambda_powertools.metrics import MetricUnit
from synapse.core import observability
from synapse.core.observability import SERVICE, entry_point, logger, metrics

from infra.gateway import LambdaContext


def _emf_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if '"_aws"' in line]


def test_an_invocation_that_counted_something_writes_its_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    # Given a handler that counts one thing
    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_metric(name="Counted", unit=MetricUnit.Count, value=1)
        return {}

    # When it is invoked
    handler({}, LambdaContext("counting"))
    # Then one EMF line carries the metric
    lines = _emf_lines(capsys.readouterr().out)
    assert len(lines) == 1 and lines[0]["Counted"] == [1.0]


def test_an_invocation_that_counted_nothing_writes_no_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a handler that counts nothing (the authorizer, a rebuild)
    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {}

    # When it is invoked, with warnings as errors
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        handler({}, LambdaContext("quiet"))
    # Then no EMF line is written and powertools has nothing to warn about
    assert _emf_lines(capsys.readouterr().out) == []


def test_logger_keys_do_not_outlive_their_invocation() -> None:
    # Given a handler that appends a key to the logger
    seen: list[Any] = []

    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(logger.get_current_keys().get("mind_id"))
        if event.get("mind_id"):
            logger.append_keys(mind_id=event["mind_id"])
        return {}

    # When it is invoked twice, the first time with a mind id
    handler({"mind_id": "m_first"}, LambdaContext("keys"))
    handler({}, LambdaContext("keys"))
    # Then the second invocation starts without the first one's key
    assert seen == [None, None]


class _Lines(logging.Handler):
    """Log lines as the service's formatter writes them, kept in memory."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logger.registered_formatter)
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_concurrent_invocations_in_one_process_each_log_their_own_function_and_request() -> None:
    # Given two functions whose invocations overlap on two threads (as in the local runner), each
    # appending its own key before logging
    lines = _Lines()
    logging.getLogger(SERVICE).addHandler(lines)
    both_inside = threading.Barrier(2, timeout=10)

    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.append_keys(request_id=event["request"])
        both_inside.wait()  # the other invocation has set its keys too
        logger.info("inside")
        both_inside.wait()
        return {}

    contexts = {
        "first": LambdaContext("create_mind", "req-first"),
        "second": LambdaContext("recall", "req-second"),
    }
    threads = [
        threading.Thread(target=handler, args=({"request": name}, context))
        for name, context in contexts.items()
    ]
    # When both run at once
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    finally:
        logging.getLogger(SERVICE).removeHandler(lines)
    # Then each line names its own function, Lambda request id and HTTP request id
    inside = sorted(
        (line["function_name"], line["function_request_id"], line["request_id"])
        for line in lines.lines
        if line["message"] == "inside"
    )
    assert inside == [("create_mind", "req-first", "first"), ("recall", "req-second", "second")]
    # And nothing is left on this thread's logger once they are done
    assert (
        "function_name" not in logger.get_current_keys() or logger.get_current_keys()["function_name"] is None
    )


def test_invocations_counting_on_many_threads_never_fail_on_the_shared_metric_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a handler that counts one thing, invoked on eight threads at once (as the local runner does)
    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_metric(name="Counted", unit=MetricUnit.Count, value=1)
        return {}

    failures: list[BaseException] = []

    def invoke_many() -> None:
        for _ in range(100):
            try:
                handler({}, LambdaContext("counting"))
            except Exception as error:  # an empty-set flush after another thread's flush, for one
                failures.append(error)

    threads = [threading.Thread(target=invoke_many) for _ in range(8)]
    # When they all run, switching threads as often as the interpreter can
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    # Then no invocation failed, and every count was written exactly once
    assert failures == []
    written = sum(sum(line["Counted"]) for line in _emf_lines(capsys.readouterr().out))
    assert written == 800


# A fresh interpreter: imports the service's observability, invokes an entry point with tracing off
# (POWERTOOLS_TRACE_DISABLED, as in tests and `make run`) that hands work to a thread as the indexer
# does, and prints whether the X-Ray SDK was loaded and what the thread saw.
_UNTRACED_INVOCATION = """
import sys
from concurrent.futures import ThreadPoolExecutor
from synapse.core.observability import entry_point, in_this_invocation, logger
from infra.gateway import LambdaContext
imported = "aws_xray_sdk" in sys.modules
def handler(event, context):
    logger.append_keys(mind_id="m_thread")
    with ThreadPoolExecutor(1) as pool:
        return {"seen": pool.submit(in_this_invocation(logger.get_current_keys)).result()["mind_id"]}
seen = entry_point()(handler)({}, LambdaContext("untraced"))["seen"]
print(imported, "aws_xray_sdk" in sys.modules, seen)
"""


def test_with_tracing_off_the_x_ray_sdk_is_never_imported() -> None:
    # Given tracing off (the Tracer would import the X-Ray SDK, the costliest import of a cold start)
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "PYTHONPATH": os.pathsep.join(sys.path)}
    # When a fresh process imports the observability module and runs an invocation that hands work
    # to another thread
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-c", _UNTRACED_INVOCATION], env=env, capture_output=True, text=True, check=False
    )
    # Then neither the import nor the invocation loaded the SDK, and the thread ran in the
    # invocation's logger keys
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "m_thread"]


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"LAMBDA_TASK_ROOT": "/var/task"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "0"},
        {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "Off"},
        {"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"},
        {"LAMBDA_TASK_ROOT": "/var/task", "AWS_CHALICE_CLI_MODE": "true"},
        {"POWERTOOLS_TRACE_DISABLED": "false"},
    ],
)
def test_tracing_is_on_exactly_when_powertools_own_rule_says_so(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an environment (observability reads the rule itself, so as not to import the Tracer)
    for name in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # When both decide
    ours = observability.tracing_enabled()
    # Then they agree
    assert ours is not bool(Tracer._is_tracer_disabled())


def test_a_tracing_switch_that_is_no_boolean_is_refused_as_powertools_refuses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given POWERTOOLS_TRACE_DISABLED set to something that is not a boolean
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "maybe")
    # When the rule is read, then it is an error, as in powertools
    with pytest.raises(ValueError, match="maybe"):
        observability.tracing_enabled()


# A fresh interpreter: an entry point that neither logs nor counts (the authorizer's Mind Key path),
# invoked twice, then one that logs: whether powertools was loaded, and the keys the log line had.
_QUIET_INVOCATION = """
import sys
from synapse.core.observability import entry_point, logger, metrics
from infra.gateway import LambdaContext
quiet = entry_point()(lambda event, context: {})
quiet({}, LambdaContext("authorizer")); quiet({}, LambdaContext("authorizer"))
after_quiet = "aws_lambda_powertools" in sys.modules
keys = entry_point()(lambda event, context: logger.get_current_keys())({}, LambdaContext("logs", "req-1"))
print(after_quiet, "aws_lambda_powertools" in sys.modules, keys["function_request_id"], keys["cold_start"])
"""


def test_an_invocation_that_logs_and_counts_nothing_imports_no_powertools() -> None:
    # Given tracing off and a fresh process
    env = {**os.environ, "POWERTOOLS_TRACE_DISABLED": "true", "PYTHONPATH": os.pathsep.join(sys.path)}
    # When entry points that log nothing run, then one that reads its logger keys
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-c", _QUIET_INVOCATION], env=env, capture_output=True, text=True, check=False
    )
    # Then powertools was loaded only by the one that logs, whose keys are its own invocation's
    # (its request, and not the process's cold start: the quiet ones came first)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "req-1", "False"]
