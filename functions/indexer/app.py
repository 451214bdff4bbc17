"""The search indexer: stream batches → one new FTS5 generation per mind; partial failures reported."""

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from synapse.core.observability import entry_point
from synapse.search import stream

# A batch whose every record fails is reported like any other (Lambda retries from the first failure).
processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return stream.index_stream(event, context, processor)
