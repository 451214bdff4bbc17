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
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # powertools' types only: its classes are imported on first use
    from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "synapse"
# Metric units as powertools' EMF names them (its MetricUnit values), so that counting imports nothing.
COUNT = "Count"
SECONDS = "Seconds"

# The keys of the invocation this context runs (cold start, the Lambda context's), until the Logger
# exists and takes them: set per invocation by `entry_point`, a ContextVar as powertools' own keys.
_invocation_keys: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "synapse_invocation_keys", default=None
)


class _LazyLogger:
    """Stands for the service's InvocationLogger (`core.powertools`), built on first use: a cold
    start that logs nothing imports no powertools (issue 35). The first use in an invocation gives
    the Logger that invocation's keys, so each line still carries them."""

    def __init__(self) -> None:
        self._logger: Logger | None = None
        self._lock = threading.Lock()

    def built(self) -> "Logger | None":
        return self._logger

    def _get(self) -> "Logger":
        if self._logger is None:
            with self._lock:
                if self._logger is None:
                    from synapse.core.powertools import InvocationLogger

                    self._logger = InvocationLogger(service=SERVICE)
        keys = _invocation_keys.get()
        if keys is not None:
            _invocation_keys.set(None)
            self._logger.thread_safe_clear_keys()
            self._logger.thread_safe_append_keys(**keys)
        return self._logger

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


class _LazyMetrics:
    """Stands for the service's ProcessMetrics (`core.powertools`), built on the first metric: an
    invocation that counted nothing flushes nothing and needs none."""

    def __init__(self) -> None:
        self._metrics: Any = None  # a core.powertools.ProcessMetrics once built
        self._lock = threading.Lock()

    def _get(self) -> "Metrics":
        if self._metrics is None:
            with self._lock:
                if self._metrics is None:
                    from synapse.core.powertools import ProcessMetrics

                    self._metrics = ProcessMetrics(service=SERVICE, namespace="Synapse")
        made: Metrics = self._metrics
        return made

    def flush_if_any(self) -> None:
        if self._metrics is not None:
            self._metrics.flush_if_any()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


_lazy_logger = _LazyLogger()
logger = cast("Logger", _lazy_logger)  # an InvocationLogger once built
# AWS calls only: the X-Ray SDK's default patches sqlite3 too, a subsegment per index statement
# (rebuilding 1,000 memories went from ~0.2 s to ~2.5 s and 4,006 segments, issue 10).
TRACED_MODULES = ("botocore",)
_lazy_metrics = _LazyMetrics()
metrics = cast("Metrics", _lazy_metrics)  # a ProcessMetrics once built

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

_warm = False
_tracer: "Tracer | None" = None
_tracer_lock = threading.Lock()
_TRUE = frozenset({"1", "y", "yes", "t", "true", "on"})
_FALSE = frozenset({"0", "n", "no", "f", "false", "off"})


def _truthy(value: str) -> bool:
    """powertools' reading of a boolean variable (its strtobool): anything else is an error."""
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"invalid truth value {value!r}")


def tracing_enabled() -> bool:
    """powertools' own rule (`Tracer._is_tracer_disabled`, without importing it): on in Lambda
    unless POWERTOOLS_TRACE_DISABLED says otherwise (off in SAM local, Chalice local and anywhere
    else). Read per invocation; environment variables only."""
    if _truthy(os.getenv("POWERTOOLS_TRACE_DISABLED", "false")):
        return False
    in_lambda = bool(os.getenv("LAMBDA_TASK_ROOT"))
    emulated = bool(os.getenv("AWS_SAM_LOCAL") or os.getenv("AWS_CHALICE_CLI_MODE"))
    return in_lambda and not emulated


def service_tracer() -> "Tracer":
    """The process's Tracer (botocore patched, nothing else), created on first use."""
    global _tracer
    with _tracer_lock:
        if _tracer is None:
            from aws_lambda_powertools import Tracer

            _tracer = Tracer(service=SERVICE, patch_modules=TRACED_MODULES)
        return _tracer


def _context_keys(context: Any) -> dict[str, Any]:
    """The Lambda context's keys on every log line (powertools' `build_lambda_context_model`)."""
    return {
        "function_name": context.function_name,
        "function_memory_size": context.memory_limit_in_mb,
        "function_arn": context.invoked_function_arn,
        "function_request_id": context.aws_request_id,
    }


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
                _lazy_metrics.flush_if_any()

        traced: list[LambdaHandler] = []  # measured inside the tracer's subsegment, wrapped once

        def maybe_traced(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if not tracing_enabled():
                return measured(event, context)
            if not traced:
                traced.append(service_tracer().capture_lambda_handler(measured, capture_response=False))
            return traced[0](event, context)

        @functools.wraps(handler)
        def logged(event: dict[str, Any], context: Any) -> dict[str, Any]:
            built = _lazy_logger.built()
            if built is not None:
                built.thread_safe_clear_keys()
            # the Logger takes these on its first use in this invocation (none if nothing logs)
            _invocation_keys.set({"cold_start": _cold_start(), **_context_keys(context)})
            if log_event:
                logger.info(event)
            try:
                answer: dict[str, Any] = maybe_traced(event, context)
                return answer
            finally:
                _invocation_keys.set(None)
                if (built := _lazy_logger.built()) is not None:
                    built.thread_safe_clear_keys()

        return logged

    return decorate
