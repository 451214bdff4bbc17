"""POST /memory/batch — 1 to 100 memories, each stored like POST /memory with the caller's credential.

Answers 200 with one result per item, in order (created, replaced, proposed or error), as a hook
delivery does.
With an Idempotency-Key, a replay within 24 h gets the first answer and applies nothing again.
"""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.hooks import answered, idempotency_key
from synapse.api.http import Request, Response, endpoint
from synapse.memory import store
from synapse.memory.model import MemoryWrite
from synapse.search import on_write
from synapse.webhooks import batch


@endpoint
def handler(request: Request) -> Response:
    key = idempotency_key(request)
    body = request.json_object(batch.MAX_BODY_BYTES)
    mind, principal = request.addressed(), request.principal

    def store_one(write: MemoryWrite) -> store.Request:
        source = principal.writer(write.source)
        return store.Request(mind.mind_id, write, source, principal.changed_by(), mind.vouches)

    answer = batch.store_batch(mind.mind_id, body, key, store_one, on_write.similar_to)
    return answered(answer, principal)
