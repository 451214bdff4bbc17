"""GET /memory/recall — the plain-text recall of SPEC §4 (or the same selection as JSON)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api import queries
from synapse.api.http import Request, Response, endpoint
from synapse.recall import reads


@endpoint
def handler(request: Request) -> Response:
    mind_id = request.mind_id()
    query = queries.recall_query(request)
    answer = reads.recall_of(mind_id, query)
    return Response.json(answer.public()) if query.as_json else Response.text(answer.text)
