"""DynamoDB access and the item layout of both tables: the one place that knows the schema.

Memories table (pk = mind id):
  MEM#<category>#<key>           the memory; the primary key makes (mind, category, key) unique
  ID#<memory id>                 pointer from id to the memory's sort key (strongly consistent lookup)
  TAG#<len>:<tag>#<recall order>  one copy per tag, in recall order (by-tag and tag-filtered recall)
  TAG#<len>:<tag>#~<recall order> the copy of a memory the expiry sweep took out (`memory.expiry`)
  NCAT                           the mind's head: its name, read with the counters (`minds.heads`)
  NCAT#<category>                counters n / v / low of the category's memories (`counts`)
  NCAT#<category>#private        the same for its memories tagged app:private, which recall leaves out
  NTAG#<len>:<tag>#<category>    the same counters for one tag within one category
  REV#<memory id>#<version>      a revision: the memory after one change (`memory.history`); `ttl`
  PROP#<proposal id>             an agent's change to a verified memory, for review (`memory.proposals`)
GSIs over memory items only (sparse): `recall` (pk, recall_sk), `created` (pk, created_sk),
`expiring` (pk, expires_at), `category_recall` (mind_category, recall_sk); the expiry sweep's
(`memory.expiry`) `expiry_sweep` (expiry_bucket, expires_at), `mind_expiring` (pk, expiry_bucket),
`category_expiring` (unread now), and its watermark SWEEP / EXPIRY.

Minds table:
  MIND#<mind id> / MIND          the mind (owner, name, memory_count; key_count, hook_count,
                                 webhook_count: see `minds.limits`); GSI `owner` (owner, created_at)
  USER#<sub> / MINDS             mind_count: how many minds the user has (`minds.limits`)
  RATE#<subject> / W#<minute>    n: requests in that minute (`ratelimit`); `ttl` expires it
  MIND#<mind id> / KEY#<key id>  a Mind Key's metadata and hash
  MIND#<mind id> / DELETING      tombstone (deleted_by) while a DELETE purges the mind's memories
  DROPINDEX#<day>#<shard> / MIND#<mind id>  index to drop (`index.index_drops`); SWEEP#ORPHANS: its cursors
  KEYHASH#<hmac> / KEYHASH       lookup from a presented key's hash to its mind and key id
  MIND#<mind id> / HOOK#<hook id>  an inbound hook's metadata (label, secret prefix; no secret)
  HOOK#<hook id> / HOOK          lookup for `POST /hooks/{id}`: mind id and the sealed secrets
                                 (current, previous + previous_valid_until while a rotation's grace runs)
  IDEM#<hook id>#<sha256> / IDEM  a delivery's idempotency claim and first answer; `ttl` (epoch s) expires it
  MIND#<mind id> / WEBHOOK#<id>  an outbound webhook subscription (url, events, sealed secret, failures)
  MIND#<mind id> / DELIVERY#<webhook id>#<attempted at>#<event id>#<attempt>
                                 one outbound delivery attempt (status, latency, next retry); `ttl` 7 days
  MIND#<mind id> / EXPIRYSENT#<memory id>#<expires_at>  marker: memory.expiring went out; `ttl`
  WEBHOOKS#EXPIRING / MIND#<mind id>  registry: n = the mind's subscriptions to memory.expiring
An item written by a conditional Put in a transaction carries `txn`, that transaction's token.
"""

import itertools
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from functools import cache
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from synapse.core import clock, json_input
from synapse.core.errors import Contention
from synapse.core.records import Record
from synapse.core.settings import get_settings

Item = dict[str, Any]

reads: Counter[str] = Counter()  # items read per call (ScannedCount): cost against answer size

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_RETRIES: Any = {"max_attempts": 4, "mode": "standard"}  # a pool of 32: the expiry sweep threads share it


@cache
def client() -> Any:
    settings = get_settings()
    return boto3.client(
        "dynamodb",
        region_name=settings.region,
        endpoint_url=settings.dynamodb_endpoint,
        config=Config(retries=_RETRIES, connect_timeout=2, read_timeout=10, max_pool_connections=32),
    )


def memories_table() -> str:
    return get_settings().memories_table


def minds_table() -> str:
    return get_settings().minds_table


# ---------------------------------------------------------------- (de)serialisation


DYNAMODB_SMALLEST_NUMBER = 1e-130  # in magnitude: DynamoDB refuses a float nearer zero; to us it is 0


def _to_dynamo_value(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal("0.0") if abs(value) < DYNAMODB_SMALLEST_NUMBER else Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _to_dynamo_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_to_dynamo_value(v) for v in value]
    return value


def _from_dynamo_value(value: Any, address: bool = False) -> Any:  # `address`: pk or sk, kept as stored
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and "." not in str(value) else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo_value(v) for v in value]
    return json_input.repaired_text(value) if isinstance(value, str) and not address else value  # U+FFFD


def dump(item: Mapping[str, Any]) -> dict[str, Any]:
    """Plain dict → DynamoDB wire format; None values are left out (sparse indexes rely on it)."""
    return {k: _serializer.serialize(_to_dynamo_value(v)) for k, v in item.items() if v is not None}


def load(item: Mapping[str, Any]) -> Item:
    return {k: _from_dynamo_value(_deserializer.deserialize(v), k in ("pk", "sk")) for k, v in item.items()}


def values(**named: Any) -> dict[str, Any]:
    """ExpressionAttributeValues from keyword arguments: values(v=1) → {":v": {"N": "1"}}."""
    return {f":{k}": _serializer.serialize(_to_dynamo_value(v)) for k, v in named.items()}


# ---------------------------------------------------------------- keys


def mind_key(mind_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": "MIND"}


def mind_key_item_key(mind_id: str, key_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"KEY#{key_id}"}


def mind_tombstone_key(mind_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": "DELETING"}


def key_hash_key(digest: str) -> dict[str, str]:
    return {"pk": f"KEYHASH#{digest}", "sk": "KEYHASH"}


HOOK_PREFIX = "HOOK#"


def hook_key(mind_id: str, hook_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{HOOK_PREFIX}{hook_id}"}


def hook_lookup_key(hook_id: str) -> dict[str, str]:
    return {"pk": f"{HOOK_PREFIX}{hook_id}", "sk": "HOOK"}


def idempotency_key(hook_id: str, digest: str) -> dict[str, str]:
    return {"pk": f"IDEM#{hook_id}#{digest}", "sk": "IDEM"}


WEBHOOK_PREFIX = "WEBHOOK#"
DELIVERY_PREFIX = "DELIVERY#"
EXPIRING_REGISTRY = "WEBHOOKS#EXPIRING"


def webhook_key(mind_id: str, webhook_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{WEBHOOK_PREFIX}{webhook_id}"}


def expiring_registry_key(mind_id: str) -> dict[str, str]:
    return {"pk": EXPIRING_REGISTRY, "sk": f"MIND#{mind_id}"}


def expiry_sent_key(mind_id: str, memory_id: str, expires_at: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"EXPIRYSENT#{memory_id}#{expires_at}"}


MEMORY_PREFIX = "MEM#"
POINTER_PREFIX = "ID#"
TAG_PREFIX = "TAG#"


def memory_sk(category: str, key: str) -> str:
    return f"{MEMORY_PREFIX}{category}#{key}"


def pointer_sk(memory_id: str) -> str:
    return f"{POINTER_PREFIX}{memory_id}"


def tag_prefix(tag: str) -> str:
    """Length-prefixed so that tag `c` never matches the items of tag `c#`."""
    return f"{TAG_PREFIX}{len(tag):02d}:{tag}#"


# ---------------------------------------------------------------- calls


def get(table: str, key: Mapping[str, str]) -> Item | None:
    answer = client().get_item(TableName=table, Key=dump(key), ConsistentRead=True)
    reads["get"] += 1 if "Item" in answer else 0
    return load(answer["Item"]) if "Item" in answer else None


def query_pages(**params: Any) -> Iterator[tuple[list[Item], dict[str, Any] | None]]:
    """Yield (items, last evaluated key) per DynamoDB page; counts every item DynamoDB read."""
    while True:
        answer = client().query(**params)
        reads["query"] += answer.get("ScannedCount", answer.get("Count", 0))
        last = answer.get("LastEvaluatedKey")
        yield [load(i) for i in answer.get("Items", [])], last
        if not last:
            return
        params = {**params, "ExclusiveStartKey": last}


def query_all(**params: Any) -> Iterator[Item]:
    for items, _ in query_pages(**params):
        yield from items


def batch_delete(table: str, keys: list[dict[str, str]]) -> None:
    """Delete keys 25 at a time, resending what DynamoDB returns unprocessed after a growing pause
    (unprocessed items mean the table is throttling: resending at once only adds to it)."""
    for start in range(0, len(keys), 25):
        pending: list[Any] = [{"DeleteRequest": {"Key": dump(k)}} for k in keys[start : start + 25]]
        for attempt in itertools.count():
            answer = client().batch_write_item(RequestItems={table: pending})
            pending = answer.get("UnprocessedItems", {}).get(table, [])
            if not pending:
                break
            time.sleep(min(2.0, 0.05 * 2**attempt) * random.uniform(0.5, 1.0))


# ---------------------------------------------------------------- transactions
#
# Every TransactWriteItems goes through `transact`, which carries a ClientRequestToken: botocore's
# own resend of a request whose answer was lost (a read timeout) is then one write, and DynamoDB
# answers the resend with the same success for 10 minutes. Conditional Puts also carry the token
# (attribute `txn`), so a store that ignores tokens (moto) is caught the same way: a resend whose
# condition fails on an item bearing our own token was applied the first time.
#
# A transaction cancelled only by contention (TransactionConflict, throttling) was not applied: it is
# sent again under a new token after a jittered exponential pause, and after the last attempt the
# caller gets a 409 with Retry-After, never a 500. Any other cancellation reason is the caller's.

TXN_ATTRIBUTE = "txn"
CONTENTION_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"}
)
# Errors after which DynamoDB applied nothing (botocore has already resent throttled ones itself).
NOT_APPLIED_ERRORS = frozenset(
    {
        "TransactionConflictException",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
    }
)
# Errors after which nobody knows: resend with the same token, so an applied transaction stays one.
UNKNOWN_OUTCOME_ERRORS = frozenset(
    {"TransactionInProgressException", "InternalServerError", "ServiceUnavailable", "RequestTimeout"}
)


class Backoff(Record):
    """Full-jitter exponential backoff; tests swap `sleep` (and `jitter`) so they never wait."""

    attempts: int = 8
    base: float = 0.025
    cap: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random

    def pause(self, attempt: int) -> None:
        self.sleep(self.jitter() * min(self.cap, self.base * 2**attempt))


BACKOFF = Backoff()


def _new_token() -> str:
    return uuid.uuid4().hex


def _stamped(operations: list[dict[str, Any]], token: str) -> list[dict[str, Any]]:
    """The operations with the token on every conditional Put's item (what a resend can fail on)."""
    stamped = []
    for operation in operations:
        put = operation.get("Put")
        if put is not None and "ConditionExpression" in put:
            operation = {"Put": {**put, "Item": {**put["Item"], TXN_ATTRIBUTE: {"S": token}}}}
        stamped.append(operation)
    return stamped


def _applied_before(operations: list[dict[str, Any]], codes: list[str], token: str) -> bool:
    """Whether a conditional Put that failed did so on the item this very transaction wrote."""
    for operation, code in zip(operations, codes, strict=False):
        put = operation.get("Put")
        if code == "ConditionalCheckFailed" and put is not None and TXN_ATTRIBUTE in put["Item"]:
            key = {name: put["Item"][name] for name in ("pk", "sk") if name in put["Item"]}
            found = get(put["TableName"], load(key))
            return found is not None and found.get(TXN_ATTRIBUTE) == token
    return False


def _resent(error: ClientError) -> bool:
    return int(error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0


def _verdict(error: ClientError, sent: list[dict[str, Any]], token: str, outcome_unknown: bool) -> str:
    """What a failed TransactWriteItems means: "applied", "raise", "unknown" or "not applied"."""
    code = error.response.get("Error", {}).get("Code", "")
    if code in UNKNOWN_OUTCOME_ERRORS:
        return "unknown"
    if code in NOT_APPLIED_ERRORS:
        return "not applied"
    if code != "TransactionCanceledException":
        return "raise"
    codes = cancellation_codes(error)
    if "ConditionalCheckFailed" in codes:
        resent = outcome_unknown or _resent(error)
        return "applied" if resent and _applied_before(sent, codes, token) else "raise"
    return "not applied" if set(codes) - {"None"} <= CONTENTION_REASONS else "raise"


def transact(operations: list[dict[str, Any]]) -> None:
    """TransactWriteItems, idempotent under resends and retried under contention (see above).

    A cancellation for any other reason (a failed condition) is raised as the client's
    TransactionCanceledException, for the caller to read with `cancellation_codes`.
    """
    token = _new_token()
    sent = _stamped(operations, token)
    outcome_unknown = False
    for attempt in range(BACKOFF.attempts):
        try:
            client().transact_write_items(TransactItems=sent, ClientRequestToken=token)
            return
        except ClientError as error:
            verdict = _verdict(error, sent, token, outcome_unknown)
            if verdict == "applied":
                return
            if verdict == "raise":
                raise
            outcome_unknown = verdict == "unknown"
            if not outcome_unknown:  # nothing was written: the next attempt is a new transaction
                token = _new_token()
                sent = _stamped(operations, token)
        except (ReadTimeoutError, ConnectTimeoutError, ConnectionClosedError, EndpointConnectionError):
            outcome_unknown = True  # botocore's own resends ran out; keep the token
        if attempt + 1 < BACKOFF.attempts:
            BACKOFF.pause(attempt)
    if outcome_unknown:
        raise Contention("The database did not confirm the write in time; read before sending it again.", 2)
    raise Contention("Others are changing the same data right now; nothing was written. Send it again.")


def cancellation_codes(error: Exception) -> list[str]:
    """The per-operation reasons of a TransactionCanceledException, aligned with its operations."""
    reasons = getattr(error, "response", {}).get("CancellationReasons", [])
    return [r.get("Code", "None") for r in reasons]


USAGE_STAMP_PERIOD = timedelta(seconds=60)


def stamp_if_stale(table: str, keys: Sequence[Mapping[str, str]], attribute: str, seen: Any) -> None:
    """Set `attribute` to now on each of the existing items `keys`, unless `seen` (its value on the
    first, as just read) is within USAGE_STAMP_PERIOD. Usage stamps (a key's last_used_at, a hook's
    last_delivery_at) are read with the item the request reads anyway, so a steady caller costs no
    write, not even a refused conditional one. The conditions keep racing requests to one write and
    never revive an item deleted meanwhile."""
    moment = clock.now()
    now, stale = clock.to_iso(moment), clock.to_iso(moment - USAGE_STAMP_PERIOD)
    if isinstance(seen, str) and seen >= stale:
        return
    for key in keys:
        try:
            client().update_item(
                TableName=table,
                Key=dump(key),
                UpdateExpression="SET #stamp = :now",
                ConditionExpression="attribute_exists(pk)"
                " AND (attribute_not_exists(#stamp) OR #stamp < :stale)",
                ExpressionAttributeNames={"#stamp": attribute},
                ExpressionAttributeValues=values(now=now, stale=stale),
            )
        except client().exceptions.ConditionalCheckFailedException:
            return  # another request stamped it (or the item is gone)
