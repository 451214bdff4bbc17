"""mem0: the JSON of `Memory.get_all()` (open source) or of the platform's `GET /v1/memories/`.

Shapes read (mem0ai/mem0: mem0/memory/main.py `_get_all_from_vector_store`, and
docs/api-reference/memory/get-memories.mdx): `{"results": [item, …]}` (with `count`/`next`/`previous`
on the platform), or a bare list of items, or JSON Lines of items. An item: `id`, `memory` (the
text), `hash`, `created_at`, `updated_at`, optionally `user_id`, `agent_id`, `run_id`, `actor_id`,
`role`, `expiration_date`, `categories` (platform) and `metadata` (whatever else the payload held).

Mapping: content = `memory`; key = `mem0_` + the item's `id` (its `hash`, then its text, when it has
none); category from `categories` or `metadata.category` where one names one of SPEC's eight or a
category of mem0's default catalog (below), else `note`; tags = `mem0`, then the categories;
`expiration_date` → `expires_at`; the item's `timestamp` (the event time given to `add`), else its
`created_at`, → `occurred_at` (when it was said: the server stamps its own `created_at`). Lost:
`updated_at`,
`hash`, `score`, the `user_id`/`agent_id`/`run_id` scoping (a mind is one scope) and `metadata`
beyond its category.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synapse_client.importers import Imported, category_of, key_of

_ZONE = re.compile(r"(Z|[+-]\d\d:?\d\d)$")

# mem0's default category catalog (mem0ai/mem0: docs/platform/features/custom-categories.mdx) → SPEC's.
CATEGORY_TABLE = {
    "personal_details": "identity",
    "family": "identity",
    "professional_details": "identity",
    "sports": "preference",
    "travel": "preference",
    "food": "preference",
    "music": "preference",
    "hobbies": "preference",
    "fashion": "preference",
    "entertainment": "preference",
    "user_preferences": "preference",
    "health": "fact",
    "milestones": "fact",
    "technology": "skill",
    "misc": "note",
}


def items_of(text: str) -> list[Any]:
    """The memory items of a mem0 dump, whichever of its shapes it has."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = [json.loads(line) for line in text.splitlines() if line.strip()]  # JSON Lines
    if isinstance(data, dict):
        data = data.get("results", data.get("memories"))
    if not isinstance(data, list):
        raise ValueError('not a mem0 dump: expected {"results": [...]} or a list of memories')
    return data


def expiry(value: Any) -> str | None:
    """mem0's `expiration_date` (a date, or a timestamp) as SPEC's timestamp with a zone."""
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if len(value) == 10:  # YYYY-MM-DD
        return f"{value}T00:00:00Z"
    return value if _ZONE.search(value) else f"{value}Z"


def event_time(item: dict[str, Any]) -> str | None:
    """When a mem0 memory was said: its `timestamp` (epoch seconds, or text), else its `created_at`,
    as a date or a timestamp with a zone (mem0 writes naive ones in UTC)."""
    for name in ("timestamp", "created_at"):
        value = item.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            try:
                return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")
            except (OverflowError, OSError, ValueError):
                continue
        if isinstance(value, str) and value.strip():
            value = value.strip()
            if len(value) == 10:  # YYYY-MM-DD
                return value
            return value if _ZONE.search(value) else f"{value}Z"
    return None


def read(path: Path) -> Imported:
    imported = Imported()
    try:
        items = items_of(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error.msg})") from None
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            imported.warnings.append(f"{path.name} item {number}: not an object, skipped")
            continue
        ident = str(item.get("id") or item.get("hash") or item.get("memory") or number)
        where = f"mem0 {ident}"
        found = item.get("metadata")
        metadata: dict[str, Any] = found if isinstance(found, dict) else {}
        categories = [str(c) for c in item.get("categories") or metadata.get("categories") or []]
        named = [category_of(c, CATEGORY_TABLE, "") for c in categories]
        named.append(category_of(metadata.get("category"), CATEGORY_TABLE, ""))
        imported.add(
            where,
            category=next((c for c in named if c), "note"),
            key=key_of(ident, "mem0"),
            content=str(item.get("memory") or ""),
            tags=["mem0", *categories],
            expires_at=expiry(item.get("expiration_date")),
            occurred_at=event_time(item),
        )
    return imported
