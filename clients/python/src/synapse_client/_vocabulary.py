"""What a memory's `category` and `priority` may be: in a module of their own, so the CLI's parser
has them without importing pydantic (`synapse_client.models` names them too)."""

from __future__ import annotations

CATEGORIES = ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note")
PRIORITIES = ("critical", "high", "normal", "low")
