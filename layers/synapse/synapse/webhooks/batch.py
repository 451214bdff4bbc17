"""A batch of memories, each with its own answer: shared by hook deliveries (`receive`) and
`POST /memory/batch`, so both answer the same shape and apply the same rules.

    {"results": [{"index": 0, "status": "created" | "replaced" | "proposed" | "error",
                  "memory" | "error": {...}, "proposal" (when proposed): {...}}, ...],
     "summary": {"created": n, "replaced": n, "proposed": n, "failed": n}}

One item's failure (validation, a refused source, a storage error) is that item's `error`; the
others are still stored. Items are stored together (`store.store_many`: one read, a few shared
transactions), with the answers and effects of storing them one after the other. `store_batch`
applies a body at most once per `Idempotency-Key`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synapse.core.errors import SynapseError, Unprocessable
from synapse.core.observability import logger
from synapse.memory import repeats, store
from synapse.memory.model import MemoryWrite
from synapse.webhooks import idempotency

MAX_BATCH = 100
# A batch of 100 memories does not fit SPEC's 64 KiB: 1 MiB holds 100 items of ~10 KiB each, stays
# far below Lambda's 6 MB payload limit, and matches what the local runner accepts.
MAX_BODY_BYTES = 1024 * 1024
# Bounds on what one failed item reports, so a hostile item cannot bloat the stored answer.
MAX_DETAILS_PER_ITEM = 5
MAX_TEXT_CHARS = 200

StoreOne = Callable[[MemoryWrite], store.Request]
"""How the caller stores one validated memory (its mind, its source, who): raises SynapseError to
refuse it. The batch's requests are then stored together (`store.store_many`)."""


def items(body: dict[str, Any]) -> list[Any]:
    """The memories of `{"memories": [...]}` with 1 to 100 items and no other field (else 422)."""
    extra = sorted(set(body) - {"memories"})
    if extra:
        raise Unprocessable(
            f"{extra[0][:80]}: a batch body holds only `memories`",
            details=[{"field": extra[0][:MAX_TEXT_CHARS], "rule": "unknown_field", "message": "not allowed"}],
        )
    if "memories" not in body:
        raise Unprocessable(
            "memories: is required",
            details=[{"field": "memories", "rule": "required", "message": "is required"}],
        )
    listed = body["memories"]
    if not isinstance(listed, list) or not 1 <= len(listed) <= MAX_BATCH:
        raise Unprocessable(
            f"memories: must be a list of 1 to {MAX_BATCH} memories",
            details=[{"field": "memories", "rule": "max_items", "message": f"1-{MAX_BATCH} items"}],
        )
    return listed


def _clip(text: Any) -> str:
    value = str(text)
    return value if len(value) <= MAX_TEXT_CHARS else value[: MAX_TEXT_CHARS - 1] + "…"


def _error(error: SynapseError) -> dict[str, Any]:
    details = [
        {name: _clip(value) for name, value in detail.items()}
        for detail in error.details[:MAX_DETAILS_PER_ITEM]
    ]
    return {"code": error.code, "message": _clip(error.message), "details": details}


def _summary(stored: store.Stored) -> dict[str, Any]:
    """What the sender needs to know of a stored memory (it sent the content itself)."""
    memory = stored.memory
    return {
        "id": memory.id,
        "category": memory.category,
        "key": memory.key,
        "version": memory.version,
        "verified": memory.verified,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "occurred_at": memory.occurred_at,  # as stored: the sender may have sent another zone
    }


def _prepared(index: int, item: Any, store_one: StoreOne) -> store.Request | dict[str, Any]:
    """One item validated like `POST /memory`'s body and checked by `store_one`, or its error result."""
    try:
        if not isinstance(item, dict):
            raise Unprocessable(
                "body: each memory must be a JSON object",
                details=[{"field": "body", "rule": "type", "message": "must be a JSON object"}],
            )
        return store_one(MemoryWrite.from_body(item))
    except Exception as error:
        return _failed(index, error)


def _failed(index: int, error: Exception) -> dict[str, Any]:
    if not isinstance(error, SynapseError):
        logger.error("Batch item failed", extra={"index": index}, exc_info=error)
        error = SynapseError("Something went wrong on our side storing this memory; send it again.")
    return {"index": index, "status": "error", "error": _error(error)}


def _result(index: int, outcome: store.Outcome) -> dict[str, Any]:
    if isinstance(outcome, Exception):
        return _failed(index, outcome)
    if outcome.proposal is not None:  # an agent's change to a verified memory, waiting for review
        proposal = outcome.proposal
        return {"index": index, "status": "proposed", "memory": _summary(outcome), "proposal": proposal}
    status = "created" if outcome.created else "replaced"
    return {"index": index, "status": status, "memory": _summary(outcome), **repeats.similar_fields(outcome)}


def apply_all(
    memories: list[Any], store_one: StoreOne, similar: repeats.FindSimilar | None = None
) -> dict[str, Any]:
    """Every item validated, then the valid ones stored together (`store.store_many`: as if one
    after the other, in order): `{"results": [...], "summary": {...}}`, one result per item in order."""
    prepared = [_prepared(index, item, store_one) for index, item in enumerate(memories)]
    requests = [(index, p) for index, p in enumerate(prepared) if isinstance(p, store.Request)]
    outcomes = store.store_many([request for _, request in requests], similar)
    results = [p for p in prepared if not isinstance(p, store.Request)]
    results += [_result(index, outcome) for (index, _), outcome in zip(requests, outcomes, strict=True)]
    results.sort(key=lambda result: int(result["index"]))
    summary = {
        "created": sum(r["status"] == "created" for r in results),
        "replaced": sum(r["status"] == "replaced" for r in results),
        "proposed": sum(r["status"] == "proposed" for r in results),
        "failed": sum(r["status"] == "error" for r in results),
    }
    return {"results": results, "summary": summary}


def store_batch(
    mind_id: str,
    body: dict[str, Any],
    idempotency_key: str | None,
    store_one: StoreOne,
    similar: repeats.FindSimilar | None = None,
) -> idempotency.Answer:
    """`POST /memory/batch`: the body's memories stored in `mind_id`, at most once per key.

    Without an `Idempotency-Key` every request is applied; with one, a replay within 24 h gets the
    first answer (and applies nothing), the same key with another body a 409.
    """
    memories = items(body)
    if idempotency_key is None:
        return idempotency.Answer(200, apply_all(memories, store_one, similar))
    claim = idempotency.claim_for_key(f"BATCH#{mind_id}", body, idempotency_key)
    first = idempotency.acquire(claim)
    if first is not None:
        return first
    answer = idempotency.Answer(200, apply_all(memories, store_one, similar))
    idempotency.finish(claim, answer)
    return answer
