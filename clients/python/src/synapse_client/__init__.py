"""Synapse's Python client: `Synapse` / `AsyncSynapse`, typed models, and `SynapseError`s."""

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
    Webhook,
)
from synapse_client.ops import UNSET

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
    "ServerError",
    "Synapse",
    "SynapseError",
    "TransportError",
    "Unauthorized",
    "ValidationFailed",
    "Webhook",
]
