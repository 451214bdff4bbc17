"""A signed delivery to an inbound hook (`POST /hooks/{hook_id}`): authenticated, then stored.

A delivery is authenticated by `Synapse-Signature` over the raw body (`signing`) with one of the
hook's live secrets (`hooks.live_secrets`). An unknown or revoked hook, or one whose creator is no
longer an owner of its mind (`minds.tenure`), is checked against a
throwaway secret, so it gets exactly the answer a bad signature gets: the endpoint is no oracle for
which hook ids exist.

The body is one memory, or `{"memories": [...]}` with 1 to 100. It is applied at most once per
idempotency key (`idempotency`). Each item of a batch is validated and stored on its own, as
`source: agent`; the answer lists every item's outcome (`batch`, shared with `POST /memory/batch`).

The caller reads the request in this order, so the answers keep their precedence: the body's size
(413), `authenticate` (401, then 429 past SYNAPSE_HOOK_RATE_LIMIT deliveries a minute), the
Idempotency-Key header's form (400), the JSON (415/400), `deliver`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synapse.core import clock
from synapse.core.errors import Forbidden, Unauthorized
from synapse.core.settings import get_limits
from synapse.memory import repeats, store
from synapse.memory.kinds import Source
from synapse.memory.model import MemoryWrite
from synapse.minds import tenure
from synapse.storage import ratelimit
from synapse.webhooks import batch, hooks, idempotency, signing

MAX_BATCH = batch.MAX_BATCH
MAX_BODY_BYTES = batch.MAX_BODY_BYTES


@dataclass(frozen=True)
class Authenticated:
    """A delivery whose signature matched one of its hook's live secrets."""

    lookup: dict[str, Any]  # the hook's lookup item, as read (`record_delivery` stamps it)
    signed_at: int
    raw_body: bytes

    @property
    def hook_id(self) -> str:
        return str(self.lookup["hook_id"])

    @property
    def mind_id(self) -> str:
        return str(self.lookup["mind_id"])


def authenticate(
    hook_id: str, raw_body: bytes, signature: str | None, now: int | None = None
) -> Authenticated:
    """The delivery, signed by its hook, or 401 — the same 401 for a hook that is not.

    `signature` is the `Synapse-Signature` header (None when missing); `now` is unix seconds.
    """
    moment = int(clock.now().timestamp()) if now is None else now
    lookup = hooks.find_lookup(hook_id)
    if lookup is not None and not tenure.holds(
        lookup["mind_id"], lookup.get("created_by"), lookup.get("tenure")
    ):
        lookup = None  # its creator is no longer an owner: revoked, or about to be (`minds.tenure`)
    if lookup is None:
        signing.verify(signature, raw_body, [signing.new_secret()], now=moment)  # raises, as a bad one
        raise Unauthorized(f"{signing.HEADER} does not match the body.")
    signed_at = signing.verify(signature, raw_body, hooks.live_secrets(lookup, moment), now=moment)
    # Counted once the signature holds: a delivery is the costly part (up to 100 memory writes), and
    # a stranger holding only the hook's URL cannot use up its sender's minute.
    ratelimit.admit(f"hook:{hook_id}", get_limits().hook_rate_limit, "This hook")
    return Authenticated(lookup, signed_at, raw_body)


def _items(body: dict[str, Any]) -> list[Any]:
    """The memories a body carries: one memory, or `{"memories": [...]}` with 1 to 100."""
    return batch.items(body) if "memories" in body else [body]


def _store_agent(mind_id: str, hook_id: str) -> batch.StoreOne:
    """How a hook stores one memory: as `source: agent`, whatever the item claims otherwise; its
    revisions and proposals name the hook."""
    changed_by = {"source": Source.AGENT.value, "hook_id": hook_id}

    def store_one(write: MemoryWrite) -> store.Request:
        if write.source not in (None, Source.AGENT):
            raise Forbidden("source: a hook stores what an agent learned; it cannot write as 'user'.")
        return store.Request(mind_id, write, Source.AGENT, changed_by)

    return store_one


def deliver(
    delivery: Authenticated,
    body: dict[str, Any],
    idempotency_key: str | None = None,
    similar: repeats.FindSimilar | None = None,
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
    answer = idempotency.Answer(
        200, batch.apply_all(items, _store_agent(delivery.mind_id, delivery.hook_id), similar)
    )
    idempotency.finish(claim, answer)
    hooks.record_delivery(delivery.lookup)
    return answer
