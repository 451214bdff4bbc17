"""The metrics an invocation wrote, read back from the EMF lines powertools prints (what CloudWatch
turns into metrics): each value by name, and each metric as CloudWatch names it."""

from __future__ import annotations

import json
from typing import Any

# (namespace, metric name, ((dimension, value), ...)): what an alarm has to name to read a metric
MetricId = tuple[str, str, tuple[tuple[str, str], ...]]


def emf_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if '"_aws"' in line]


def values(output: str) -> dict[str, list[float]]:
    """Every value written per metric name, in order, over all EMF lines of `output`."""
    found: dict[str, list[float]] = {}
    for line in emf_lines(output):
        for directive in line["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                value = line[metric["Name"]]
                found.setdefault(metric["Name"], []).extend(value if isinstance(value, list) else [value])
    return found


def metric_ids(output: str) -> set[MetricId]:
    """Each metric of `output` under each dimension set it was written with."""
    found: set[MetricId] = set()
    for line in emf_lines(output):
        for directive in line["_aws"]["CloudWatchMetrics"]:
            for dimensions in directive["Dimensions"]:
                named = tuple(sorted((name, str(line[name])) for name in dimensions))
                found |= {(directive["Namespace"], m["Name"], named) for m in directive["Metrics"]}
    return found
