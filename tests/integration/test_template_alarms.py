"""The alarms on Synapse's own metrics read what the code writes (issue 23): the sweeps' functions are
run, their EMF lines read back, and every alarm on the Synapse namespace must name one of those
metrics with the same dimensions, so renaming a metric or a dimension cannot silently leave an alarm
on a metric nobody writes; every lag metric has an alarm; the thresholds sit between what a healthy
run writes and the point where work is lost. Also the sizing parameters: the API's throttling and
where each parameter is shown."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from synapse.index import index_drops, orphans
from synapse.memory import expiry, sweep

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.support import events as sample_events
from tests.support import metrics as emitted
from tests.support.api import Api
from tests.support.clock import MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.metrics import MetricId
from tests.support.settings import configure_fixture as configure_fixture

NAMESPACE = "Synapse"


def _alarms() -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in template.resources("AWS::CloudWatch::Alarm").items()}


def _read_metrics(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """Each metric an alarm reads: its own, or each one its metric math reads."""
    if "Metrics" in alarm:
        return [m["MetricStat"]["Metric"] for m in alarm["Metrics"] if "MetricStat" in m]
    return [{k: alarm[k] for k in ("Namespace", "MetricName", "Dimensions") if k in alarm}]


def _metric_id(metric: dict[str, Any]) -> MetricId:
    dimensions = tuple(sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions", [])))
    return metric["Namespace"], metric["MetricName"], dimensions


def _alarmed() -> dict[MetricId, str]:
    """Every metric of the Synapse namespace an alarm reads -> the alarm."""
    return {
        _metric_id(metric): name
        for name, alarm in _alarms().items()
        for metric in _read_metrics(alarm)
        if metric["Namespace"] == NAMESPACE
    }


@pytest.fixture
def written(
    api: Api, moved: MovableClock, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> set[MetricId]:
    """The metrics the scheduled background functions write, as CloudWatch would name them."""
    functions = template.resources("AWS::Serverless::Function")
    capsys.readouterr()
    for name, event in (
        ("ExpirySweepFunction", sample_events.load("expiry_sweep")),
        ("RebuildIndexFunction", {"sweep": True}),
    ):
        handler = load_handler(template.ROOT / functions[name]["Properties"]["CodeUri"], "app.handler")
        handler(event, LambdaContext(name))
    return emitted.metric_ids(capsys.readouterr().out)


def test_every_alarm_on_synapses_metrics_reads_a_metric_the_code_writes(written: set[MetricId]) -> None:
    # Given the metrics the sweeps write, and those Synapse's alarms read
    alarmed = _alarmed()
    assert alarmed, "no alarm reads the Synapse namespace"
    # Then each alarmed metric is written under exactly that name and those dimensions
    orphaned = {alarm: metric for metric, alarm in alarmed.items() if metric not in written}
    assert orphaned == {}, f"alarms on metrics nothing writes: {orphaned}; written: {sorted(written)}"


def test_every_lag_metric_the_code_writes_has_an_alarm(written: set[MetricId]) -> None:
    # Given the lag metrics the sweeps write
    lags = {metric for metric in written if metric[1].endswith("LagSeconds")}
    assert {m[1] for m in lags} == {sweep.LAG_METRIC, orphans.LAG_METRIC}
    # Then each has an alarm, notifying the alarm topic
    for metric in lags:
        assert metric in _alarmed(), metric
        alarm = _alarms()[_alarmed()[metric]]
        assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}], metric


def test_the_expiry_sweep_lag_alarm_sits_above_a_healthy_run_and_ignores_one_late_run() -> None:
    # Given the expiry sweep's lag alarm
    (alarm,) = [a for a in _alarms().values() if a.get("MetricName") == sweep.LAG_METRIC]
    # Then it trips at a whole unswept hour beyond the previous one: a shard that keeps up starts from
    # the previous hour, so a healthy run writes under 2 buckets (test_expiry_shards.py shows it)
    assert alarm["Threshold"] == 2 * expiry.BUCKET_WIDTH.total_seconds()
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    # And only when the worst group was behind in every 15 minutes of an hour, no data not breaching
    schedule = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]["Properties"]
    assert {e["Properties"]["Schedule"] for e in schedule["Events"].values()} == {"rate(15 minutes)"}
    assert (alarm["Statistic"], alarm["Period"]) == ("Maximum", 900)
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == 4
    assert alarm["TreatMissingData"] == "notBreaching"


def test_the_orphan_sweep_lag_alarm_trips_long_before_a_marker_expires() -> None:
    (alarm,) = [a for a in _alarms().values() if a.get("MetricName") == orphans.LAG_METRIC]
    # Two days behind, with 28 of a marker's 30 days left to fix it; one run a day
    assert alarm["Threshold"] == timedelta(days=2).total_seconds()
    assert alarm["Threshold"] < index_drops.TTL.total_seconds() / 10
    assert (alarm["Statistic"], alarm["Period"], alarm["TreatMissingData"]) == (
        "Maximum",
        86400,
        "notBreaching",
    )


def test_the_indexers_iterator_age_alarm_trips_long_before_records_are_given_up_on() -> None:
    # Given the indexer's stream settings and its iterator age alarm
    (props,) = [
        event["Properties"]
        for event in template.resources("AWS::Serverless::Function")["IndexerFunction"]["Properties"][
            "Events"
        ].values()
        if event["Type"] == "DynamoDB"
    ]
    (alarm,) = [
        a
        for a in _alarms().values()
        if a.get("MetricName") == "IteratorAge"
        and a["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "IndexerFunction"}}]
    ]
    # Then an indexer doing half the load (iterator age growing 0.5 s a second) is alarmed on within
    # a tenth of the time before its first record passes MaximumRecordAgeInSeconds
    give_up = props["MaximumRecordAgeInSeconds"]
    reaches_threshold = alarm["Threshold"] / 1000 / 0.5
    alarmed_after = reaches_threshold + alarm["Period"] * alarm["EvaluationPeriods"]
    assert alarmed_after < (give_up / 0.5) / 10, (alarmed_after, give_up)


# ---------------------------------------------------------------- sizing parameters


def test_the_apis_throttling_is_sized_by_parameters_at_the_account_defaults() -> None:
    # Given the HTTP API's stage throttling and its parameters
    api = next(iter(template.resources("AWS::Serverless::HttpApi").values()))["Properties"]
    parameters = template.load()["Parameters"]
    # Then both limits come from parameters, defaulting to API Gateway's account quota per Region
    # (10,000 requests/s, burst 5,000): at or above the model's 5,000 writes/s, never above the account
    assert api["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ApiThrottleRate"},
        "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurst"},
    }
    assert (parameters["ApiThrottleRate"]["Default"], parameters["ApiThrottleBurst"]["Default"]) == (
        10_000,
        5_000,
    )


def test_every_parameter_is_in_one_parameter_group() -> None:
    # Given the console's parameter groups
    document = template.load()
    groups = document["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    grouped = [name for group in groups for name in group["Parameters"]]
    # Then each parameter is shown exactly once, and nothing that is no parameter
    assert sorted(grouped) == sorted(document["Parameters"])
    assert len(grouped) == len(set(grouped))


def test_the_deploy_docs_list_every_parameter_and_the_sizing_section() -> None:
    text = (template.ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for name in template.load()["Parameters"]:
        assert f"`{name}`" in text, name
    sizing = text.split("\n## Sizing for many minds\n", 1)
    assert len(sizing) == 2, "docs/deploy.md has no sizing section"
    section = sizing[1].split("\n## ", 1)[0]
    for named in (
        "ApiThrottleRate",
        "ApiThrottleBurst",
        "IndexerParallelizationFactor",
        "WebhookDeliveryMaxConcurrency",
        "AccountThrottlesAlarm",
        "TableThrottlesAlarm",
        "IndexerIteratorAgeAlarm",
        "ExpirySweepLagAlarm",
        "OrphanSweepLagAlarm",
    ):
        assert named in section, named
        assert named in template.load()["Parameters"] or named in _alarms(), named
