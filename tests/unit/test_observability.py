"""The one entry-point decorator: metrics flushed when an invocation counted something, nothing
written when it counted nothing, and no logger key carried into the next invocation."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from aws_lambda_powertools.metrics import MetricUnit
from synapse.core.observability import entry_point, logger, metrics

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
