"""POST /hooks/{hook_id} — a signed delivery of one memory or a batch, stored as `source: agent`.

No JWT or Mind Key: the route has no authorizer; `Synapse-Signature` authenticates the request.
The request is read in this order, which sets which error a bad one gets: a query parameter (400: a
hook takes none, `http.endpoint`), the body's size (413), the signature (401), the Idempotency-Key
header (400), the JSON (415/400).
"""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import answered, idempotency_key
from synapse.api.http import Request, Response, public_endpoint
from synapse.auth.principal import Principal
from synapse.search import on_write
from synapse.webhooks import receive, signing


@public_endpoint
def handler(request: Request) -> Response:
    raw = request.raw_body(receive.MAX_BODY_BYTES)
    signature = request.headers.get(signing.HEADER.lower())
    delivery = receive.authenticate(request.path("hook_id"), raw, signature)
    key = idempotency_key(request)
    answer = receive.deliver(delivery, request.json_object(receive.MAX_BODY_BYTES), key, on_write.similar_to)
    return answered(answer, Principal.hook(delivery.mind_id, delivery.hook_id))  # a hook writes only
