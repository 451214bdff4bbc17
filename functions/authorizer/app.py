"""HTTP API Lambda authorizer: JWT or Mind Key → principal in the request context."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.auth.authorizer import authorize
from synapse.core.observability import entry_point


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return authorize(event)
