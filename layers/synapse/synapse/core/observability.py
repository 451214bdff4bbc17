"""The one Logger, Tracer and Metrics of the service, created once per process, and the one
decorator every Lambda entry point wears (HTTP handlers get it through `api.http.endpoint`).

The Tracer is created on the first invocation that is traced, not at import: building one imports
the X-Ray SDK (its recorder, sampling rules and patchers: the largest single cost of a cold start,
issue 14) even when tracing is off. Off (POWERTOOLS_TRACE_DISABLED, or outside Lambda, as powertools
decides) an invocation runs untraced and the SDK is never imported.

Logger keys belong to the invocation, not the process: the local runner serves every function from
one process on many threads, so `logger.append_keys` (and the Lambda context keys `entry_point`
adds) go to powertools' thread-safe keys, a ContextVar each thread holds on its own. Each log line
names its own function and request; on Lambda (one invocation per process) nothing changes.

Work an invocation hands to its own threads (`in_this_invocation`) carries both: the context
variables (those logger keys) and, when traced, the X-Ray entity, which the SDK keeps per thread."""

import contextvars
import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.lambda_context import build_lambda_context_model
from aws_lambda_powertools.metrics import MetricResolution, MetricUnit

SERVICE = "synapse"


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


logger = InvocationLogger(service=SERVICE)
# AWS calls only: the X-Ray SDK's default patches sqlite3 too, a subsegment per index statement
# (rebuilding 1,000 memories went from ~0.2 s to ~2.5 s and 4,006 segments, issue 10).
TRACED_MODULES = ("botocore",)
metrics = ProcessMetrics(service=SERVICE, namespace="Synapse")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

_warm = False
_tracer: Tracer | None = None
_tracer_lock = threading.Lock()


def tracing_enabled() -> bool:
    """powertools' own rule: on in Lambda unless POWERTOOLS_TRACE_DISABLED says otherwise (off in SAM
    local, Chalice local and anywhere else). Read per invocation; environment variables only."""
    return not Tracer._is_tracer_disabled()


def service_tracer() -> Tracer:
    """The process's Tracer (botocore patched, nothing else), created on first use."""
    global _tracer
    with _tracer_lock:
        if _tracer is None:
            _tracer = Tracer(service=SERVICE, patch_modules=TRACED_MODULES)
        return _tracer


def _trace_entity() -> tuple[Any, Any] | None:
    """(recorder, the calling thread's segment or subsegment) when this invocation is traced; None
    otherwise, without importing the X-Ray SDK (the Tracer exists only once a traced call built it)."""
    if _tracer is None or not tracing_enabled():
        return None
    recorder: Any = _tracer.provider
    entity = recorder.get_trace_entity()
    return None if entity is None else (recorder, entity)


def in_this_invocation[**P, R](work: Callable[P, R]) -> Callable[P, R]:
    """`work`, to be run on another thread as part of the calling one's invocation: with a copy of
    its context variables (the logger's invocation keys) and, when traced, its X-Ray entity, so the
    AWS calls the thread makes are subsegments of the invocation's handler. A thread starts without
    the X-Ray SDK's entity (it is thread-local): in Lambda its calls would hang off a facade segment
    of their own beside the handler's, elsewhere they would not be recorded at all. Call it on the
    submitting thread, once per task (a context cannot be entered by two threads at once)."""
    context = contextvars.copy_context()
    traced = _trace_entity()

    @functools.wraps(work)
    def carried(*args: P.args, **kwargs: P.kwargs) -> R:
        if traced is None:
            return context.run(work, *args, **kwargs)
        recorder, entity = traced
        recorder.set_trace_entity(entity)
        try:
            return context.run(work, *args, **kwargs)
        finally:
            recorder.clear_trace_entities()  # the thread may serve another task next

    return carried


def _cold_start() -> bool:
    """True for this process's first invocation only (what powertools' own decorator reports)."""
    global _warm
    cold, _warm = not _warm, True
    return cold


def entry_point(*, log_event: bool = False) -> Callable[[LambdaHandler], LambdaHandler]:
    """Logger context (cleared per invocation, so no key leaks into the next one), a tracing
    segment for the invocation, and metrics flushed when it returns."""

    def decorate(handler: LambdaHandler) -> LambdaHandler:
        @functools.wraps(handler)
        def measured(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                return handler(event, context)
            finally:
                metrics.flush_if_any()

        traced: list[LambdaHandler] = []  # measured inside the tracer's subsegment, wrapped once

        def maybe_traced(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if not tracing_enabled():
                return measured(event, context)
            if not traced:
                traced.append(service_tracer().capture_lambda_handler(measured, capture_response=False))
            return traced[0](event, context)

        @functools.wraps(handler)
        def logged(event: dict[str, Any], context: Any) -> dict[str, Any]:
            logger.thread_safe_clear_keys()
            logger.thread_safe_append_keys(
                cold_start=_cold_start(), **build_lambda_context_model(context).__dict__
            )
            if log_event:
                logger.info(event)
            try:
                answer: dict[str, Any] = maybe_traced(event, context)
                return answer
            finally:
                logger.thread_safe_clear_keys()

        return logged

    return decorate
