"""Synapse's Python client: `Synapse` / `AsyncSynapse`, typed models, and `SynapseError`s.

The names below are imported on first use (PEP 562), not with the package: `synapse --help`, a
usage error or `synapse_client.importers` then never load httpx and pydantic, and a command loads
only what it runs (`synapse_client.cli`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from synapse_client._core import Call, Retry
    from synapse_client.client import AsyncSynapse, Synapse
    from synapse_client.errors import (
        BadRequest,
        Conflict,
        Forbidden,
        NotFound,
        PreconditionFailed,
        RateLimited,
        ServerError,
        SynapseError,
        TransportError,
        Unauthorized,
        ValidationFailed,
    )
    from synapse_client.models import (
        BatchAnswer,
        BatchResult,
        CreatedMind,
        Hook,
        Memory,
        Mind,
        MindKey,
        Page,
        Recall,
        RecallText,
        SearchHit,
        SearchPage,
        SimilarMemories,
        SimilarMemory,
        Webhook,
    )
    from synapse_client.ops import UNSET

_HOMES = {
    "synapse_client._core": ("Call", "Retry"),
    "synapse_client.client": ("AsyncSynapse", "Synapse"),
    "synapse_client.errors": (
        "BadRequest",
        "Conflict",
        "Forbidden",
        "NotFound",
        "PreconditionFailed",
        "RateLimited",
        "ServerError",
        "SynapseError",
        "TransportError",
        "Unauthorized",
        "ValidationFailed",
    ),
    "synapse_client.models": (
        "BatchAnswer",
        "BatchResult",
        "CreatedMind",
        "Hook",
        "Memory",
        "Mind",
        "MindKey",
        "Page",
        "Recall",
        "RecallText",
        "SearchHit",
        "SearchPage",
        "SimilarMemories",
        "SimilarMemory",
        "Webhook",
    ),
    "synapse_client.ops": ("UNSET",),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "UNSET",
    "AsyncSynapse",
    "BadRequest",
    "BatchAnswer",
    "BatchResult",
    "Call",
    "Conflict",
    "CreatedMind",
    "Forbidden",
    "Hook",
    "Memory",
    "Mind",
    "MindKey",
    "NotFound",
    "Page",
    "PreconditionFailed",
    "RateLimited",
    "Recall",
    "RecallText",
    "Retry",
    "SearchHit",
    "SearchPage",
    "ServerError",
    "SimilarMemories",
    "SimilarMemory",
    "Synapse",
    "SynapseError",
    "TransportError",
    "Unauthorized",
    "ValidationFailed",
    "Webhook",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
