"""The one Logger, Tracer and Metrics of the service, created once per process, and the one
decorator every Lambda entry point wears (HTTP handlers get it through `api.http.endpoint`)."""

import functools
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "synapse"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(service=SERVICE, namespace="Synapse")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def entry_point(*, log_event: bool = False) -> Callable[[LambdaHandler], LambdaHandler]:
    """Logger context (cleared per invocation, so no key leaks into the next one), a tracing
    segment for the invocation, and metrics flushed when it returns."""

    def decorate(handler: LambdaHandler) -> LambdaHandler:
        @functools.wraps(handler)
        def measured(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                return handler(event, context)
            finally:
                if metrics.metric_set:  # an invocation that counted nothing writes no empty EMF line
                    metrics.flush_metrics()

        traced = tracer.capture_lambda_handler(capture_response=False)(measured)
        wrapped: LambdaHandler = logger.inject_lambda_context(log_event=log_event, clear_state=True)(traced)
        return wrapped

    return decorate
