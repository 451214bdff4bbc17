"""Who is calling: what the authorizer puts in the request context and what handlers read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synapse.core.errors import Forbidden, Unauthorized
from synapse.memory.model import Source


@dataclass(frozen=True)
class Principal:
    """Who is calling: a user (JWT) or an agent holding a Mind Key for one mind."""

    source: Source
    user_id: str | None = None
    key_id: str | None = None
    mind_id: str | None = None

    @property
    def is_user(self) -> bool:
        return self.source is Source.USER

    def to_context(self) -> dict[str, str]:
        return {
            "source": self.source.value,
            "user_id": self.user_id or "",
            "key_id": self.key_id or "",
            "mind_id": self.mind_id or "",
        }

    @classmethod
    def from_context(cls, context: dict[str, Any] | None) -> Principal:
        context = context or {}
        if context.get("error") or context.get("source") not in {"user", "agent"}:
            raise Unauthorized(str(context.get("error") or "A valid JWT or Mind Key is required."))
        return cls(
            source=Source(context["source"]),
            user_id=context.get("user_id") or None,
            key_id=context.get("key_id") or None,
            mind_id=context.get("mind_id") or None,
        )

    def require_user(self, action: str) -> str:
        if not self.is_user or not self.user_id:
            raise Forbidden(f"Only a person signed in with a JWT may {action}; a Mind Key may not.")
        return self.user_id

    def writer(self, claimed: Source | None) -> Source:
        """The source a write carries: the credential's. A body that claims otherwise is refused."""
        if claimed is not None and claimed is not self.source:
            raise Forbidden(
                f"source: the body says {claimed.value!r} but the credential writes as {self.source.value!r}."
            )
        return self.source
