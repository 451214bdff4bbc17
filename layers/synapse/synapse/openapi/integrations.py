"""The answers of hooks (inbound deliveries) and webhooks (outbound events): pydantic models that
only describe the JSON, as in `schemas`."""

from __future__ import annotations

from synapse.openapi.schemas import _Answer


class Hook(_Answer):
    id: str
    url: str
    label: str
    secret_prefix: str
    created_at: str
    rotated_at: str | None
    previous_secret_valid_until: str | None
    last_delivery_at: str | None


class HookWithSecret(Hook):
    """A hook as created or rotated: `secret` is shown this once."""

    secret: str


class HookPage(_Answer):
    hooks: list[Hook]
    next_cursor: str | None


class Webhook(_Answer):
    id: str
    url: str
    events: list[str]
    enabled: bool
    created_at: str
    updated_at: str
    failing_since: str | None
    last_success_at: str | None
    last_failure_at: str | None
    last_error: str | None
    disabled_reason: str | None


class WebhookWithSecret(Webhook):
    secret: str


class WebhookPage(_Answer):
    webhooks: list[Webhook]
    next_cursor: str | None


class Delivery(_Answer):
    event_id: str | None
    event_type: str | None
    attempt: int | None
    attempted_at: str | None
    status_code: int | None
    error: str | None
    latency_ms: int | None
    state: str | None
    next_retry_at: str | None


class DeliveryList(_Answer):
    deliveries: list[Delivery]


class TestOutcome(_Answer):
    event_id: str
    event_type: str
    delivered: bool
    status_code: int | None
    error: str | None
    latency_ms: int | None
