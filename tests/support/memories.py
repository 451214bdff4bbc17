"""Stored memories built in memory (no DynamoDB), for tests of what a memory item carries."""

from __future__ import annotations

from synapse.memory.kinds import Memory


def a_memory(mind_id: str, *, key: str = "k", expires_at: str | None = None) -> Memory:
    """A verified fact of `mind_id`, written 2026-11-30 08:00 UTC."""
    return Memory(
        id=f"mem_{mind_id}_{key}",
        mind_id=mind_id,
        category="fact",
        key=key,
        content="x",
        tags=[],
        priority="normal",
        source="user",
        verified=True,
        confidence=1.0,
        expires_at=expires_at,
        created_at="2026-11-30T08:00:00.000Z",
        updated_at="2026-11-30T08:00:00.000Z",
        version=1,
    )
