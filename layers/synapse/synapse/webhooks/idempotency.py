"""A signed hook delivery (or a `POST /memory/batch` with an `Idempotency-Key`) is applied at most
once per idempotency key within 24 hours.

Senders retry, so each delivery has up to two keys: always the signed content itself (timestamp +
raw body), so a captured request replayed with another header is caught too, and the sender's
`Idempotency-Key` header when it gives one. A conditional put claims every key at once before
anything is applied; a concurrent duplicate waits briefly for the first answer, else gets 409
(`in_progress`). The first answer is stored (compressed) on the claims and served to every duplicate.

    claim = claim_for(...); first = acquire(claim)
    if first is None: answer = <apply>; finish(claim, answer)
"""

import hashlib
import json
import random
import secrets
import time
import zlib
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import Conflict, InProgress
from synapse.storage import tables

IDEMPOTENCY_SECONDS = 24 * 3600
# A claim older than this was left by an invocation that died (the function times out at 30 s).
CLAIM_LEASE_SECONDS = 120
WAIT_FOR_FIRST_SECONDS = 5.0


class Answer(NamedTuple):
    """What a delivery answered; `replayed` when it is the stored answer of an earlier one."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


class Claim(NamedTuple):
    """The keys one delivery claims, the hash of what it carries, and a token naming this attempt."""

    hook_id: str
    keys: list[dict[str, str]]
    body_hash: str
    token: str


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def claim_for(
    hook_id: str, signed_at: int, raw_body: bytes, body: dict[str, Any], idempotency_key: str | None
) -> Claim:
    """The claim of a delivery: its signed content's key, the header's key if any, and the hash of
    its parsed body (key order and spacing aside), which a reused key must match."""
    keys = [tables.idempotency_key(hook_id, _digest(b"signed", str(signed_at).encode(), raw_body))]
    if idempotency_key is not None:
        keys.append(tables.idempotency_key(hook_id, _digest(b"header", idempotency_key.encode())))
    return Claim(hook_id, keys, _body_hash(body), secrets.token_hex(8))


def claim_for_key(scope: str, body: dict[str, Any], idempotency_key: str) -> Claim:
    """The claim of an unsigned request (`POST /memory/batch`): the header's key alone, within
    `scope` (e.g. one mind), and the hash of its parsed body."""
    key = tables.idempotency_key(scope, _digest(b"header", idempotency_key.encode()))
    return Claim(scope, [key], _body_hash(body), secrets.token_hex(8))


def _body_hash(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(canonical).hexdigest()


def _claim_op(claim: Claim, key: dict[str, str], now: int) -> dict[str, Any]:
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


def _first_answer(claim: Claim, now: int) -> Answer | None:
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
        return Answer(int(answer["status"]), answer["body"], replayed=True)
    return None


def acquire(claim: Claim) -> Answer | None:
    """Claim every key (None: go ahead and apply), or the first answer if another delivery has it."""
    deadline = time.monotonic() + WAIT_FOR_FIRST_SECONDS
    pause = 0.02
    while True:
        now = int(clock.now().timestamp())
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


def finish(claim: Claim, answer: Answer) -> None:
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
