"""The request bodies of the webhook and hook routes (pydantic, strict, built on first use).

Apart from `subscriptions` and `hooks` so that the handlers that only read, delete or deliver
import no pydantic (issue 14, cold start); `subscriptions.create`/`update` read these through
the `WebhookFields`/`WebhookChanges` protocols.
"""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from synapse.core.settings import get_settings
from synapse.memory import event_names
from synapse.memory.model import Body, KeyWrite
from synapse.webhooks import ssrf
from synapse.webhooks.hooks import DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS

# ---------------------------------------------------------------- webhook subscriptions


def _check_events(value: list[str]) -> list[str]:
    if not value:
        raise PydanticCustomError("min_items", "name at least one event")
    unknown = [v for v in value if v not in event_names.SUBSCRIBABLE]
    if unknown:
        raise PydanticCustomError(
            "enum", f"unknown event {unknown[0][:64]!r}; choose from {', '.join(event_names.SUBSCRIBABLE)}"
        )
    return list(dict.fromkeys(value))


def _check_url_shape(value: str) -> str:
    try:
        ssrf.parse(value, get_settings().webhooks_allow_loopback)
    except ssrf.Refused as refused:
        raise PydanticCustomError(refused.rule, refused.message) from None
    return value


class WebhookWrite(Body):
    """`POST /minds/{mind_id}/webhooks`."""

    url: str
    events: list[str]

    _url = field_validator("url")(_check_url_shape)
    _events = field_validator("events")(_check_events)


class WebhookPatch(Body):
    """`PATCH /minds/{mind_id}/webhooks/{id}`: fields left out stay."""

    url: str | None = None
    events: list[str] | None = None
    enabled: bool | None = None

    _url = field_validator("url")(lambda v: None if v is None else _check_url_shape(v))
    _events = field_validator("events")(lambda v: None if v is None else _check_events(v))


# ---------------------------------------------------------------- inbound hooks


class HookWrite(KeyWrite):
    """The body of `POST /minds/{mind_id}/hooks`: an optional label."""


class HookRotate(Body):
    """The body of `POST /minds/{mind_id}/hooks/{hook_id}/rotate`."""

    grace_seconds: int = Field(default=DEFAULT_GRACE_SECONDS, ge=0, le=MAX_GRACE_SECONDS)
