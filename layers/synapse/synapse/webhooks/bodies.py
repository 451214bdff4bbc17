"""The request bodies of the webhook and hook routes (`core.validation.Body`).

Apart from `subscriptions` and `hooks`, which read them through the `WebhookFields`/`WebhookChanges`
protocols, so that the handlers that only read, delete or deliver do not load the rules.
"""

from __future__ import annotations

from synapse.core.settings import get_settings
from synapse.core.validation import Body, Invalid, Rule, accepts
from synapse.memory import event_names
from synapse.memory.model import KeyWrite
from synapse.webhooks import ssrf
from synapse.webhooks.hooks import DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS

# ---------------------------------------------------------------- webhook subscriptions


def _check_url_shape(value: str) -> str:
    try:
        ssrf.parse(value, get_settings().webhooks_allow_loopback)
    except ssrf.Refused as refused:
        raise Invalid(refused.rule, refused.message) from None
    return value


URL = Rule(check=_check_url_shape, schema={"description": "An https URL on a public address."})
EVENTS = Rule(
    "array",
    items=Rule(choices=event_names.SUBSCRIBABLE),
    min_items=1,
    check=lambda events: list(dict.fromkeys(events)),  # each event once, in the order sent
)


class WebhookWrite(Body):
    """`POST /minds/{mind_id}/webhooks`."""

    url: str = accepts(URL)
    events: list[str] = accepts(EVENTS)


class WebhookPatch(Body):
    """`PATCH /minds/{mind_id}/webhooks/{id}`: fields left out stay."""

    url: str | None = accepts(URL, default=None)
    events: list[str] | None = accepts(EVENTS, default=None)
    enabled: bool | None = accepts(Rule("boolean"), default=None)


# ---------------------------------------------------------------- inbound hooks


class HookWrite(KeyWrite):
    """The body of `POST /minds/{mind_id}/hooks`: an optional label."""


class HookRotate(Body):
    """The body of `POST /minds/{mind_id}/hooks/{hook_id}/rotate`."""

    grace_seconds: int = accepts(
        Rule("integer", minimum=0, maximum=MAX_GRACE_SECONDS), default=DEFAULT_GRACE_SECONDS
    )
