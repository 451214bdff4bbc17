"""`SynapseStore`: Synapse as a LangGraph `BaseStore` (`pip install 'synapse-client[langgraph]'`).

How a LangGraph item maps onto a Synapse memory (one mind: the client's):

- category: the namespace's first label when it is one of Synapse's 8 (`("preference", "u1")` →
  `preference`), otherwise `note`;
- key: the item key in lowercase snake_case plus 10 hex digits of a hash of (namespace, key), so
  equal keys in different namespaces never collide (`("notes", "u1")`, `"Coffee order"` →
  `coffee_order_32632ed60f`);
- tags: `app:private` (the item is this app's data, not the person's: recall, search and the review
  queue without a `tag` leave it out, docs/api.md "Application data"), `app:langgraph`, one
  `app:langgraph:ns:<prefix>` per namespace prefix (`app:langgraph:ns:notes`,
  `app:langgraph:ns:notes/u1`) for server-side filtering, and `app:langgraph:item:<hash>` naming the
  item (a get is one request; two for an item that is not there: it also looks for an earlier
  version's);
- content: the value as a person reads it (its `text` when that is all it holds, else one
  `field: value` line per field), then the exact item as JSON in a ```` ```langgraph ```` block at the
  end, so items read back exactly (tags are lowercased by Synapse; the JSON is the truth) and
  full-text search reads the value's words.
- `search(prefix, query=...)` is a Synapse search narrowed to the prefix's tag (hits carry its score);
  without `query` it lists the prefix's tag in recall order. `filter` compares top-level value fields
  (equality, or `$eq`/`$ne`/`$gt`/`$gte`/`$lt`/`$lte`). A put's `ttl` (minutes) becomes `expires_at`;
  reads do not extend it (`refresh_ttl` is ignored), and `index` is ignored (Synapse indexes all text).
- memories this store did not write (no JSON block) are skipped by search and list_namespaces. An
  item written by an earlier version (raw JSON content, tags `langgraph`, `ns:…`, `lg:…`) is still
  read by `get`, and stored the new way when put again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError("SynapseStore needs LangGraph: pip install 'synapse-client[langgraph]'") from missing

from synapse_client.client import Synapse
from synapse_client.models import CATEGORIES, Memory

PRIVATE = "app:private"  # an application's data: out of a person's recall and search
MARK = "app:langgraph"
MAX_DEPTH = 17  # Synapse keeps at most 20 tags: `app:private`, MARK, the item's, and one per prefix
_TAG_CHARS = 64
_FENCE, _END = "```langgraph\n", "\n```"
_KEY_CHARS = 128 - 11


def category_of(namespace: tuple[str, ...]) -> str:
    return namespace[0] if namespace and namespace[0] in CATEGORIES else "note"


def _digest(namespace: tuple[str, ...], key: str) -> str:
    return hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()[:10]


def synapse_key(namespace: tuple[str, ...], key: str) -> str:
    """The deterministic Synapse key of a LangGraph (namespace, key)."""
    slug = "_".join(re.findall(r"[a-z0-9]+", key.lower()))[:_KEY_CHARS].strip("_") or "item"
    return f"{slug}_{_digest(namespace, key)}"


def namespace_tag(prefix: tuple[str, ...]) -> str:
    tag = f"{MARK}:ns:" + "/".join(prefix).lower()
    if len(tag) <= _TAG_CHARS:
        return tag
    return f"{MARK}:ns:#" + hashlib.sha256(tag.encode()).hexdigest()[:32]


def item_tag(namespace: tuple[str, ...], key: str) -> str:
    return f"{MARK}:item:{_digest(namespace, key)}"


def _legacy_item_tag(namespace: tuple[str, ...], key: str) -> str:
    """The item tag of the earlier versions, whose items `get` still reads."""
    return f"lg:{_digest(namespace, key)}"


def readable(value: Mapping[str, Any]) -> str:
    """The value as a person reads it: its `text` when that is all it holds, else `field: value`
    lines (a value that is not a string as JSON)."""
    if set(value) == {"text"} and isinstance(value["text"], str) and value["text"].strip():
        return value["text"]
    lines = []
    for field, item in value.items():
        shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        lines.append(f"{field}: {shown}")
    return "\n".join(lines) or "(empty)"


def content_of(namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> str:
    """A memory's content for an item: readable, then the exact item in a `langgraph` block."""
    exact = json.dumps({"namespace": list(namespace), "key": key, "value": dict(value)}, ensure_ascii=False)
    return f"{readable(value)}\n\n{_FENCE}{exact}{_END}"


def _decoded(memory: Memory) -> tuple[tuple[str, ...], str, dict[str, Any]] | None:
    """(namespace, key, value) of a memory this store wrote (its last `langgraph` block, or the raw
    JSON of an earlier version), or None for any other memory."""
    content = memory.content
    start = content.rfind(_FENCE)
    exact = content[start + len(_FENCE) : -len(_END)] if start >= 0 and content.endswith(_END) else content
    try:
        body = json.loads(exact)
        return tuple(body["namespace"]), str(body["key"]), dict(body["value"])
    except (ValueError, KeyError, TypeError):
        return None


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "$eq": lambda a, b: a == b,
        "$ne": lambda a, b: a != b,
        "$gt": lambda a, b: a is not None and a > b,
        "$gte": lambda a, b: a is not None and a >= b,
        "$lt": lambda a, b: a is not None and a < b,
        "$lte": lambda a, b: a is not None and a <= b,
    }
    for field, wanted in (conditions or {}).items():
        actual = value.get(field)
        if isinstance(wanted, dict) and wanted and all(op in compare for op in wanted):
            if not all(compare[op](actual, operand) for op, operand in wanted.items()):
                return False
        elif actual != wanted:
            return False
    return True


def _fits(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))


class SynapseStore(BaseStore):
    """A LangGraph store whose items are memories of the client's mind (mapping: the module's doc).
    `abatch` runs `batch` in a worker thread, so the one blocking client serves both."""

    supports_ttl = True

    def __init__(self, client: Synapse) -> None:
        self.client = client

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"unknown store operation: {op!r}")

    def _memory(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        wanted = synapse_key(namespace, key)
        for tag in (item_tag(namespace, key), _legacy_item_tag(namespace, key)):
            found = self.client.list_memories(category=category_of(namespace), tag=tag, limit=100).items
            memory = next((memory for memory in found if memory.key == wanted), None)
            if memory is not None:
                return memory
        return None

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._memory(namespace, key)
        decoded = memory and _decoded(memory)
        if not memory or not decoded:
            return None
        return Item(
            value=decoded[2],
            key=key,
            namespace=namespace,
            created_at=_time(memory.created_at),
            updated_at=_time(memory.updated_at),
        )

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        if op.value is None:
            memory = self._memory(namespace, key)
            if memory is not None:
                self.client.forget(memory.id)
            return
        if len(namespace) > MAX_DEPTH:
            raise ValueError(f"SynapseStore namespaces are at most {MAX_DEPTH} labels deep: {namespace}")
        prefixes = [namespace_tag(namespace[: depth + 1]) for depth in range(len(namespace))]
        expires = None
        if op.ttl is not None:
            expires = (datetime.now(UTC) + timedelta(minutes=op.ttl)).isoformat().replace("+00:00", "Z")
        self.client.remember(
            category_of(namespace),
            synapse_key(namespace, key),
            content_of(namespace, key, op.value),
            tags=[PRIVATE, MARK, item_tag(namespace, key), *prefixes],
            expires_at=expires,
        )

    def _candidates(self, op: SearchOp) -> Iterator[tuple[Memory, float | None]]:
        prefix = tuple(op.namespace_prefix)
        tag = namespace_tag(prefix) if prefix else MARK
        if op.query:
            for hit in self.client.iter_search(op.query, tag=tag, limit=100):
                yield hit.memory, hit.score
        else:
            for memory in self.client.iter_by_tag(tag, limit=100):
                yield memory, None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix, found, skip = tuple(op.namespace_prefix), [], op.offset
        for memory, score in self._candidates(op):
            decoded = _decoded(memory)
            if not decoded or decoded[0][: len(prefix)] != prefix or not _matches(decoded[2], op.filter):
                continue
            if skip:
                skip -= 1
                continue
            namespace, key, value = decoded
            created, updated = _time(memory.created_at), _time(memory.updated_at)
            found.append(SearchItem(namespace, key, value, created, updated, score))
            if len(found) >= op.limit:
                break
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for memory in self.client.iter_by_tag(MARK, limit=100):
            decoded = _decoded(memory)
            if not decoded or not all(
                _fits(condition, decoded[0]) for condition in op.match_conditions or ()
            ):
                continue
            seen.add(decoded[0][: op.max_depth] if op.max_depth is not None else decoded[0])
        return sorted(seen)[op.offset : op.offset + op.limit]
