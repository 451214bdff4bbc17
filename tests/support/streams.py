"""DynamoDB stream records as Lambda hands them to the indexer (NEW_AND_OLD_IMAGES), for the tests
and benches that drive `synapse.index.stream` without a table's stream."""

from __future__ import annotations

from typing import Any


def stream_record(
    new: dict[str, Any] | None, old: dict[str, Any] | None = None, sequence: int = 1
) -> dict[str, Any]:
    """The record of a change of one stored item: INSERT with its new image only, MODIFY with both,
    REMOVE with its old image only; `sequence` orders it in its shard."""
    from synapse.storage import tables  # the layer the caller runs (the benches run older ones too)

    image = new or old
    if image is None:
        raise ValueError("a stream record has a new image, an old one, or both")
    body: dict[str, Any] = {
        "Keys": tables.dump({"pk": image["pk"], "sk": image["sk"]}),
        "SequenceNumber": str(10**20 + sequence),
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    if new is not None:
        body["NewImage"] = tables.dump(new)
    if old is not None:
        body["OldImage"] = tables.dump(old)
    return {
        "eventID": f"{sequence:032x}",
        "eventName": "REMOVE" if new is None else "MODIFY" if old is not None else "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": body,
    }
