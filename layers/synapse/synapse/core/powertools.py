"""The service's powertools Logger and Metrics: imported by `core.observability` on first use only.

Importing anything of aws_lambda_powertools runs its package `__init__`, which loads its Logger,
Metrics and Tracer modules and typing_extensions (~8 ms of a cold start beyond `import boto3`,
issue 35): a function that logs and counts nothing on its path (the authorizer deciding a Mind Key)
never pays for them."""

import threading
from collections.abc import Iterable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricResolution, MetricUnit


class InvocationLogger(Logger):
    """powertools' Logger whose appended keys are the calling thread's (its invocation's) only."""

    def append_keys(self, **additional_keys: object) -> None:
        self.thread_safe_append_keys(**additional_keys)

    def get_current_keys(self) -> dict[str, Any]:
        return {**super().get_current_keys(), **self.thread_safe_get_current_keys()}

    def remove_keys(self, keys: Iterable[str]) -> None:
        self.thread_safe_remove_keys(keys)


class ProcessMetrics(Metrics):
    """powertools' Metrics, whose one metric set per process is added to and flushed under a lock:
    in the local runner invocations on other threads add and flush too (on Lambda there is one)."""

    _lock = threading.RLock()

    def add_metric(
        self, name: str, unit: MetricUnit | str, value: float, resolution: MetricResolution | int = 60
    ) -> None:
        with self._lock:
            super().add_metric(name, unit, value, resolution)

    def flush_if_any(self) -> None:
        """Write the metrics counted so far, if any: no empty EMF line for an invocation that counted
        nothing, and no error when another thread flushed them first."""
        with self._lock:
            if self.metric_set:
                self.flush_metrics()
