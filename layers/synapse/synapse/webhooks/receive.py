"""A signed delivery to an inbound hook (`POST /hooks/{hook_id}`): authenticated, then stored.

A delivery is authenticated by `Synapse-Signature` over the raw body (`signing`) with one of the
hook's live secrets (`hooks.live_secrets`). An unknown or revoked hook is checked against a
throwaway secret, so it gets exactly the answer a bad signature gets: the endpoint is no oracle for
which hook ids exist.

The body is one memory, or `{"memories": [...]}` with 1 to 100. It is applied at most once per
idempotency key (`idempotency`). Each item of a batch is validated and stored on its own, as
`source: agent`; the answer lists every item's outcome.

The caller reads the request in this order, so the answers keep their precedence: the body's size
(413), `authenticate` (401, then 429 past SYNAPSE_HOOK_RATE_LIMIT deliveries a minute), the
Idempotency-Key header's form (400), the JSON (415/400), `deliver`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synapse.core import clock
from synapse.core.errors import Forbidden, SynapseError, Unauthorized, Unprocessable
from synapse.core.observability import logger
from synapse.core.settings import get_limits
from synapse.memory import store
from synapse.memory.model import MemoryWrite, Source, parse
from synapse.storage import ratelimit
from synapse.webhooks import hooks, idempotency, signing

MAX_BATCH = 100
# A batch of 100 memories does not fit SPEC's 64 KiB: 1 MiB holds 100 items of ~10 KiB each, stays
# far below Lambda's 6 MB payload limit, and matches what the local runner accepts.
MAX_BODY_BYTES = 1024 * 1024
# Bounds on what one failed item reports, so a hostile item cannot bloat the stored answer.
MAX_DETAILS_PER_ITEM = 5
MAX_TEXT_CHARS = 200


@dataclass(frozen=True)
class Authenticated:
    """A delivery whose signature matched one of its hook's live secrets."""

    hook_id: str
    mind_id: str
    signed_at: int
    raw_body: bytes


def authenticate(
    hook_id: str, raw_body: bytes, signature: str | None, now: int | None = None
) -> Authenticated:
    """The delivery, signed by its hook, or 401 — the same 401 for a hook that is not.

    `signature` is the `Synapse-Signature` header (None when missing); `now` is unix seconds.
    """
    moment = int(clock.now().timestamp()) if now is None else now
    lookup = hooks.find_lookup(hook_id)
    if lookup is None:
        signing.verify(signature, raw_body, [signing.new_secret()], now=moment)  # raises, as a bad one
        raise Unauthorized(f"{signing.HEADER} does not match the body.")
    signed_at = signing.verify(signature, raw_body, hooks.live_secrets(lookup, moment), now=moment)
    # Counted once the signature holds: a delivery is the costly part (up to 100 memory writes), and
    # a stranger holding only the hook's URL cannot use up its sender's minute.
    ratelimit.admit(f"hook:{hook_id}", get_limits().hook_rate_limit, "This hook")
    return Authenticated(hook_id, lookup["mind_id"], signed_at, raw_body)


def _items(body: dict[str, Any]) -> list[Any]:
    """The memories a body carries: one memory, or `{"memories": [...]}` with 1 to 100."""
    if "memories" not in body:
        return [body]
    extra = sorted(set(body) - {"memories"})
    if extra:
        raise Unprocessable(
            f"{extra[0][:80]}: a batch body holds only `memories`",
            details=[{"field": extra[0][:MAX_TEXT_CHARS], "rule": "unknown_field", "message": "not allowed"}],
        )
    items = body["memories"]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
        raise Unprocessable(
            f"memories: must be a list of 1 to {MAX_BATCH} memories",
            details=[{"field": "memories", "rule": "max_items", "message": f"1-{MAX_BATCH} items"}],
        )
    return items


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
    }


def _apply(mind_id: str, index: int, item: Any) -> dict[str, Any]:
    try:
        if not isinstance(item, dict):
            raise Unprocessable(
                "body: each memory must be a JSON object",
                details=[{"field": "body", "rule": "type", "message": "must be a JSON object"}],
            )
        write = parse(MemoryWrite, item)
        if write.source not in (None, Source.AGENT):
            raise Forbidden("source: a hook stores what an agent learned; it cannot write as 'user'.")
        stored = store.store(mind_id, write, Source.AGENT)
    except SynapseError as error:
        return {"index": index, "status": "error", "error": _error(error)}
    except Exception:
        logger.exception("Hook item failed", extra={"index": index})
        failure = SynapseError("Something went wrong on our side storing this memory; send it again.")
        return {"index": index, "status": "error", "error": _error(failure)}
    return {"index": index, "status": "created" if stored.created else "replaced", "memory": _summary(stored)}


def deliver(
    delivery: Authenticated, body: dict[str, Any], idempotency_key: str | None = None
) -> idempotency.Answer:
    """Store what an authenticated delivery carries (`body`, its raw body parsed), at most once.

    `idempotency_key` is the sender's `Idempotency-Key` header, already checked for form.
    """
    items = _items(body)
    claim = idempotency.claim_for(
        delivery.hook_id, delivery.signed_at, delivery.raw_body, body, idempotency_key
    )
    first = idempotency.acquire(claim)
    if first is not None:
        return first
    results = [_apply(delivery.mind_id, index, item) for index, item in enumerate(items)]
    summary = {
        "created": sum(r["status"] == "created" for r in results),
        "replaced": sum(r["status"] == "replaced" for r in results),
        "failed": sum(r["status"] == "error" for r in results),
    }
    answer = idempotency.Answer(200, {"results": results, "summary": summary})
    idempotency.finish(claim, answer)
    hooks.record_delivery(delivery.mind_id, delivery.hook_id)
    return answer
