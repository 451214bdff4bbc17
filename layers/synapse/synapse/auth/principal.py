"""Who is calling: what the authorizer puts in the request context and what handlers read."""

from typing import Any, NamedTuple

from synapse.core.errors import Forbidden, Unauthorized
from synapse.core.sources import Source
from synapse.minds.keys import ALL_SCOPES, SCOPES

HOOK_SCOPES = frozenset({"write"})  # a hook delivery only ever stores


class Principal(NamedTuple):
    """Who is calling: a user (JWT), an agent holding a Mind Key for one mind, an agent's signed
    hook delivery (`hook_id`, write only), or a connected app's OAuth grant (`grant_id`, /mcp
    only). `scopes` is what the credential may do; a user may do all."""

    source: Source
    user_id: str | None = None
    key_id: str | None = None
    mind_id: str | None = None
    hook_id: str | None = None
    grant_id: str | None = None
    scopes: frozenset[str] = ALL_SCOPES
    email: str | None = None  # a person's JWT `email` claim, when it carries one
    email_verified: bool = False  # and its `email_verified` claim: only a verified email matches

    @classmethod
    def hook(cls, mind_id: str, hook_id: str) -> "Principal":
        """The writer of a signed hook delivery."""
        return cls(source=Source.AGENT, mind_id=mind_id, hook_id=hook_id, scopes=HOOK_SCOPES)

    @property
    def is_user(self) -> bool:
        return self.source is Source.USER

    def changed_by(self) -> dict[str, str]:
        """Who made a change, as revisions, proposals and the audit show it."""
        if self.is_user:
            return {"source": "user", "user_id": self.user_id or ""}
        if self.hook_id:
            return {"source": "agent", "hook_id": self.hook_id}
        if self.grant_id:
            return {"source": "agent", "grant_id": self.grant_id}
        return {"source": "agent", "key_id": self.key_id or ""}

    def require_scope(self, scope: str | None) -> None:
        """403 naming the scope when the credential lacks it (a user never does; None needs none)."""
        if scope is not None and not self.is_user and scope not in self.scopes:
            kind = "hook" if self.hook_id else "connected app" if self.grant_id else "Mind Key"
            raise Forbidden(f"This {kind} lacks the {scope!r} scope.", details=[{"scope": scope}])

    def to_context(self) -> dict[str, str]:
        """The authorizer's context: strings only; `email` and `email_verified` only when known."""
        verified = "true" if self.email_verified else ""
        email = {"email": self.email, "email_verified": verified} if self.email else {}
        return {
            "source": self.source.value,
            "user_id": self.user_id or "",
            "key_id": self.key_id or "",
            "mind_id": self.mind_id or "",
            "hook_id": self.hook_id or "",
            "grant_id": self.grant_id or "",
            "scopes": ",".join(scope for scope in SCOPES if scope in self.scopes),
            **email,
        }

    @classmethod
    def from_context(cls, context: dict[str, Any] | None) -> "Principal":
        context = context or {}
        if context.get("error") or context.get("source") not in {"user", "agent"}:
            raise Unauthorized(str(context.get("error") or "A valid JWT or Mind Key is required."))
        source = Source(context["source"])
        return cls(
            source=source,
            user_id=context.get("user_id") or None,
            key_id=context.get("key_id") or None,
            mind_id=context.get("mind_id") or None,
            hook_id=context.get("hook_id") or None,
            grant_id=context.get("grant_id") or None,
            scopes=ALL_SCOPES if source is Source.USER else _scopes(context.get("scopes")),
            email=context.get("email") or None,
            email_verified=str(context.get("email_verified", "")).lower() == "true",
        )

    def verified_email(self) -> str | None:
        """The person's email when their identity provider says it is verified, else None."""
        return self.email if self.is_user and self.email and self.email_verified else None

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


def _scopes(raw: Any) -> frozenset[str]:
    """The scopes a context names; a context without the field (one written before scopes) has all."""
    if raw is None:
        return ALL_SCOPES
    return frozenset(scope for scope in str(raw).split(",") if scope in ALL_SCOPES)
