"""The memory's closed vocabularies: category, priority and who wrote it.

Apart from `model` (which re-exports them) because the authorizer and the read paths need these and
nothing else of the model: importing them costs no pydantic (issue 14, cold start)."""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    IDENTITY = "identity"
    PREFERENCE = "preference"
    FACT = "fact"
    PROJECT = "project"
    SKILL = "skill"
    MISTAKE = "mistake"
    CONTEXT = "context"
    NOTE = "note"


class Priority(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @property
    def rank(self) -> int:
        """Recall order: critical first."""
        return _PRIORITY_RANK[self]


_PRIORITY_RANK = {Priority.CRITICAL: 0, Priority.HIGH: 1, Priority.NORMAL: 2, Priority.LOW: 3}


class Source(StrEnum):
    USER = "user"
    AGENT = "agent"
