"""Inbound hooks: agent platforms post memories to `POST /hooks/{hook_id}`, signed, not logged in.

A hook belongs to one mind. Its signing secret is shown once and kept sealed (`sealed`), because the
server must compute the same HMAC again; a rotation keeps the previous secret valid for a grace
period. The lookup item `HOOK#<id>` finds mind and secrets with one GetItem.

A delivery is authenticated by `Synapse-Signature` over the raw body (`signing`). An unknown or
revoked hook is checked against a throwaway secret, so it gets exactly the answer a bad signature
gets: the endpoint is no oracle for which hook ids exist.

Senders retry, so a delivery is applied at most once per idempotency key within 24 hours: the
`Idempotency-Key` header, and always the signed content itself (timestamp + body), so a captured
request replayed with another header is caught too. A conditional put claims each key before
anything is applied; a concurrent duplicate waits briefly for the first answer, else gets 409.
The first answer is stored (compressed) on the claim and served to every duplicate.

Each item of a batch is validated and stored on its own; the answer lists every item's outcome.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import secrets
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from synapse.api.http import Request
from synapse.core import clock
from synapse.core.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    InProgress,
    NotFound,
    SynapseError,
    Unauthorized,
    Unprocessable,
)
from synapse.core.ids import looks_like_id, new_id
from synapse.core.observability import logger
from synapse.memory import store
from synapse.memory.model import KeyWrite, MemoryWrite, Source, parse
from synapse.minds import keys, minds
from synapse.storage import tables
from synapse.webhooks import sealed, signing

HOOK_ID_PREFIX = "hook_"
SHOWN_SECRET_CHARS = 10
MAX_BATCH = 100
# A batch of 100 memories does not fit SPEC's 64 KiB: 1 MiB holds 100 items of ~10 KiB each, stays
# far below Lambda's 6 MB payload limit, and matches what the local runner accepts.
MAX_BODY_BYTES = 1024 * 1024
DEFAULT_GRACE_SECONDS = 24 * 3600
MAX_GRACE_SECONDS = 7 * 24 * 3600
IDEMPOTENCY_SECONDS = 24 * 3600
# A claim older than this was left by an invocation that died (the function times out at 30 s).
CLAIM_LEASE_SECONDS = 120
WAIT_FOR_FIRST_SECONDS = 5.0
IDEMPOTENCY_KEY_MAX_CHARS = 255
# Bounds on what one failed item reports, so a hostile item cannot bloat the stored answer.
MAX_DETAILS_PER_ITEM = 5
MAX_TEXT_CHARS = 200


class HookWrite(KeyWrite):
    """The body of `POST /minds/{mind_id}/hooks`: an optional label."""


class HookRotate(BaseModel):
    """The body of `POST /minds/{mind_id}/hooks/{hook_id}/rotate`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    grace_seconds: int = Field(default=DEFAULT_GRACE_SECONDS, ge=0, le=MAX_GRACE_SECONDS)


# ---------------------------------------------------------------- management (JWT, owner only)


def _bound(hook_id: str) -> str:
    """What a sealed secret is bound to: a secret copied onto another hook's item does not open."""
    return f"hook:{hook_id}"


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def base_url(request: Request) -> str:
    """Where this API answers, so a hook's URL can be absolute; empty when the host is unknown.

    API Gateway always sends X-Forwarded-Proto; without it this is the local runner (plain http).
    """
    context = request.event.get("requestContext") or {}
    host = str(context.get("domainName") or request.headers.get("host") or "")
    if not _HOST.fullmatch(host):
        return ""
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    if forwarded:
        return f"{'http' if forwarded == 'http' else 'https'}://{host}"
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return f"{'http' if name in {'127.0.0.1', 'localhost', '[::1]'} else 'https'}://{host}"


_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:]{2,39}\](:[0-9]{1,5})?")


def _public(item: dict[str, Any], base: str) -> dict[str, Any]:
    return {
        "id": item["id"],
        "url": f"{base}/hooks/{item['id']}",
        "label": item["label"],
        "secret_prefix": item["secret_prefix"],
        "created_at": item["created_at"],
        "rotated_at": item.get("rotated_at"),
        "previous_secret_valid_until": item.get("previous_secret_valid_until"),
        "last_delivery_at": item.get("last_delivery_at"),
    }


def _put(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def create_hook(owner: str, mind_id: str, label: str, base: str = "") -> dict[str, Any]:
    """A new hook; its secret appears in this answer and never again."""
    minds.owned_mind(owner, mind_id)
    hook_id = new_id(HOOK_ID_PREFIX)
    secret = signing.new_secret()
    now = clock.to_iso(clock.now())
    item = {
        **tables.hook_key(mind_id, hook_id),
        "id": hook_id,
        "mind_id": mind_id,
        "label": label,
        "secret_prefix": secret[:SHOWN_SECRET_CHARS],
        "created_at": now,
    }
    lookup = {
        **tables.hook_lookup_key(hook_id),
        "hook_id": hook_id,
        "mind_id": mind_id,
        "secret": sealed.seal(secret, _bound(hook_id)),
    }
    minds.transact_in_live_mind(mind_id, [_put(item), _put(lookup)])
    return {**_public(item, base), "secret": secret}


def _hook_items(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :hook)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", hook=tables.HOOK_PREFIX),
        )
    )


def list_hooks(owner: str, mind_id: str, base: str = "") -> list[dict[str, Any]]:
    minds.owned_mind(owner, mind_id)
    return [_public(item, base) for item in _hook_items(mind_id)]


def _owned_hook(owner: str, mind_id: str, hook_id: str) -> dict[str, Any]:
    minds.owned_mind(owner, mind_id)
    found = looks_like_id(HOOK_ID_PREFIX, hook_id)
    item = tables.get(tables.minds_table(), tables.hook_key(mind_id, hook_id)) if found else None
    if item is None:
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    return item


def delete_hook(owner: str, mind_id: str, hook_id: str) -> None:
    """Revoke at once: the lookup goes, so the next delivery is a 401."""
    _owned_hook(owner, mind_id, hook_id)
    tables.delete_together(
        tables.minds_table(), [tables.hook_lookup_key(hook_id), tables.hook_key(mind_id, hook_id)]
    )


def hook_keys_of_mind(mind_id: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The keys of the mind's hooks' (lookups, metadata items), for deleting the mind."""
    found = _hook_items(mind_id)
    return (
        [tables.hook_lookup_key(item["id"]) for item in found],
        [tables.hook_key(mind_id, item["id"]) for item in found],
    )


def rotate_secret(
    owner: str, mind_id: str, hook_id: str, grace_seconds: int, base: str = ""
) -> dict[str, Any]:
    """A new secret, shown once; the one it replaces stays valid for `grace_seconds`.

    Only the latest previous secret is kept: rotating again during a grace ends the older one.
    """
    _owned_hook(owner, mind_id, hook_id)
    lookup = tables.get(tables.minds_table(), tables.hook_lookup_key(hook_id))
    if lookup is None:
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    secret = signing.new_secret()
    now = clock.now()
    until = _epoch(now) + grace_seconds
    until_iso = clock.to_iso(datetime.fromtimestamp(until, now.tzinfo))
    try:
        tables.transact(
            [
                {
                    "Update": {
                        "TableName": tables.minds_table(),
                        "Key": tables.dump(tables.hook_lookup_key(hook_id)),
                        "UpdateExpression": "SET secret = :new, previous = :old, "
                        "previous_valid_until = :until",
                        "ConditionExpression": "secret = :old",
                        "ExpressionAttributeValues": tables.values(
                            new=sealed.seal(secret, _bound(hook_id)), old=lookup["secret"], until=until
                        ),
                    }
                },
                {
                    "Update": {
                        "TableName": tables.minds_table(),
                        "Key": tables.dump(tables.hook_key(mind_id, hook_id)),
                        "UpdateExpression": "SET rotated_at = :now, secret_prefix = :prefix, "
                        "previous_secret_valid_until = :until",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": tables.values(
                            now=clock.to_iso(now), prefix=secret[:SHOWN_SECRET_CHARS], until=until_iso
                        ),
                    }
                },
            ]
        )
    except tables.client().exceptions.TransactionCanceledException:
        raise Conflict("The hook was rotated or revoked at the same moment; look again and retry.") from None
    item = tables.get(tables.minds_table(), tables.hook_key(mind_id, hook_id))
    if item is None:  # revoked the moment it was rotated
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    return {**_public(item, base), "secret": secret}


# ---------------------------------------------------------------- deliveries (signed, no login)


@dataclass(frozen=True)
class Delivered:
    """The answer to a delivery; `replayed` when it is the stored first answer."""

    status: int
    body: dict[str, Any]
    replayed: bool = False

    @property
    def headers(self) -> dict[str, str]:
        return {"Idempotent-Replayed": "true"} if self.replayed else {}


def _live_secrets(lookup: dict[str, Any], now: int) -> list[str]:
    bound = _bound(lookup["hook_id"])
    live = [sealed.unseal(lookup["secret"], bound)]
    if lookup.get("previous") and now < int(lookup.get("previous_valid_until", 0)):
        live.append(sealed.unseal(lookup["previous"], bound))
    return live


def authenticate(hook_id: str, raw: bytes, header: str | None, now: int) -> tuple[dict[str, Any], int]:
    """(the hook's lookup item, the signed timestamp), or 401 — the same 401 for a hook that is not."""
    found = looks_like_id(HOOK_ID_PREFIX, hook_id)
    lookup = tables.get(tables.minds_table(), tables.hook_lookup_key(hook_id)) if found else None
    if lookup is None:
        signing.verify(header, raw, [signing.new_secret()], now=now)  # raises, with the bad-signature message
        raise Unauthorized(f"{signing.HEADER} does not match the body.")
    return lookup, signing.verify(header, raw, _live_secrets(lookup, now), now=now)


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


def _idempotency_key(request: Request) -> str | None:
    value = request.headers.get("idempotency-key")
    if value is None:
        return None
    if not 1 <= len(value) <= IDEMPOTENCY_KEY_MAX_CHARS or not all(33 <= ord(c) <= 126 for c in value):
        raise BadRequest(
            f"Idempotency-Key: must be 1-{IDEMPOTENCY_KEY_MAX_CHARS} visible ASCII characters.",
            details=[{"field": "Idempotency-Key", "rule": "format", "message": "visible ASCII, 1-255"}],
        )
    return value


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


# ------------------------------------------------ idempotency claims


@dataclass
class _Claim:
    hook_id: str
    keys: list[dict[str, str]]
    body_hash: str
    token: str = field(default_factory=lambda: secrets.token_hex(8))


def _claim_op(claim: _Claim, key: dict[str, str], now: int) -> dict[str, Any]:
    item = {
        **key,
        "hook_id": claim.hook_id,
        "state": "pending",
        "token": claim.token,
        "body_hash": claim.body_hash,
        "claimed_at": now,
        "ttl": now + IDEMPOTENCY_SECONDS,
    }
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            # Free, expired (TTL deletes lazily), or left pending by an invocation that died.
            "ConditionExpression": "attribute_not_exists(pk) OR #ttl <= :now "
            "OR (#state = :pending AND claimed_at < :stale)",
            "ExpressionAttributeNames": {"#ttl": "ttl", "#state": "state"},
            "ExpressionAttributeValues": tables.values(
                now=now, pending="pending", stale=now - CLAIM_LEASE_SECONDS
            ),
        }
    }


def _first_answer(claim: _Claim, now: int) -> Delivered | None:
    """The stored answer of an earlier delivery with one of these keys; None while none is done.

    A key reused with another body is a 409: answering it with the first body's outcome would
    hide a sender's bug.
    """
    for key in claim.keys:
        item = tables.get(tables.minds_table(), key)
        if item is None or int(item.get("ttl", 0)) <= now or item.get("state") != "done":
            continue
        if item.get("body_hash") != claim.body_hash:
            raise Conflict("Idempotency-Key: already used within 24 h for a different body; use a new key.")
        stored = item["answer"]
        raw = stored.value if hasattr(stored, "value") else stored
        answer = json.loads(zlib.decompress(bytes(raw)))
        return Delivered(int(answer["status"]), answer["body"], replayed=True)
    return None


def _acquire(claim: _Claim) -> Delivered | None:
    """Claim every key (None: go ahead and apply), or the first answer if another delivery has it."""
    deadline = time.monotonic() + WAIT_FOR_FIRST_SECONDS
    pause = 0.02
    while True:
        now = _epoch(clock.now())
        try:
            tables.transact([_claim_op(claim, key, now) for key in claim.keys])
            return None
        except tables.client().exceptions.TransactionCanceledException:
            pass
        first = _first_answer(claim, now)
        if first is not None:
            return first
        if time.monotonic() >= deadline:
            raise InProgress("The same delivery is being applied right now; retry in a few seconds.")
        time.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, 0.5)


def _finish(claim: _Claim, answer: Delivered) -> None:
    """Record the answer on every claim at once: one left pending (the invocation dying between
    two writes) would make a retry carrying only that key wait, then apply the delivery again."""
    blob = zlib.compress(json.dumps({"status": answer.status, "body": answer.body}).encode())
    updates = [
        {
            "TableName": tables.minds_table(),
            "Key": tables.dump(key),
            "UpdateExpression": "SET #state = :done, answer = :answer",
            "ConditionExpression": "#token = :token",
            "ExpressionAttributeNames": {"#state": "state", "#token": "token"},
            "ExpressionAttributeValues": tables.values(done="done", answer=blob, token=claim.token),
        }
        for key in claim.keys
    ]
    try:
        tables.transact([{"Update": update} for update in updates])
        return
    except tables.client().exceptions.TransactionCanceledException:
        pass  # a claim lapsed and another invocation took it over: record ours where it still holds
    for update in updates:
        try:
            tables.client().update_item(**update)
        except tables.client().exceptions.ConditionalCheckFailedException:
            pass  # that invocation's answer stands


def _touch(mind_id: str, hook_id: str) -> None:
    """Record `last_delivery_at` on the hook, at most once a minute."""
    now = clock.now()
    tables.stamp_at_most_every(
        tables.minds_table(),
        tables.hook_key(mind_id, hook_id),
        "last_delivery_at",
        now=clock.to_iso(now),
        stale=clock.to_iso(now - keys.LAST_USED_RESOLUTION),
    )


# ------------------------------------------------ applying items


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


def receive(request: Request) -> Delivered:
    """Authenticate, parse, claim, apply each item, remember the answer."""
    hook_id = request.path("hook_id")
    raw = request.raw_body(MAX_BODY_BYTES)
    now = _epoch(clock.now())
    lookup, signed_at = authenticate(hook_id, raw, request.headers.get(signing.HEADER.lower()), now)
    idempotency_key = _idempotency_key(request)
    body = request.json_object(MAX_BODY_BYTES)
    items = _items(body)
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    keys = [tables.idempotency_key(hook_id, _digest(b"signed", str(signed_at).encode(), raw))]
    if idempotency_key is not None:
        keys.append(tables.idempotency_key(hook_id, _digest(b"header", idempotency_key.encode())))
    claim = _Claim(hook_id, keys, hashlib.sha256(canonical).hexdigest())
    first = _acquire(claim)
    if first is not None:
        return first
    results = [_apply(lookup["mind_id"], index, item) for index, item in enumerate(items)]
    summary = {
        "created": sum(r["status"] == "created" for r in results),
        "replaced": sum(r["status"] == "replaced" for r in results),
        "failed": sum(r["status"] == "error" for r in results),
    }
    answer = Delivered(200, {"results": results, "summary": summary})
    _finish(claim, answer)
    _touch(lookup["mind_id"], hook_id)
    return answer
