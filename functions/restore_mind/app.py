"""POST /minds/{mind_id}/restore — a chunk of a backup's lines into a new or empty mind, for its owner."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.core.errors import UnsupportedMediaType
from synapse.minds import minds
from synapse.portability import restore

LINE_TYPES = frozenset({"application/x-ndjson", "application/jsonl", ""})


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("restore a mind")
    mind = minds.get_mind(request.path("mind_id"))  # the owner role: ROUTE_ROLES, checked by endpoint
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in LINE_TYPES:
        raise UnsupportedMediaType(f"Send the backup's lines as application/x-ndjson, not {content_type!r}.")
    body = request.raw_body(restore.MAX_BODY_BYTES)
    last = bool(request.query_bool("last", False))
    return Response.json(restore.restore(mind, owner, body, last))
