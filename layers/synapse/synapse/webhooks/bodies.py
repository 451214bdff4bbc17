"""The request bodies of the webhook and hook routes (`core.validation.Body`).

Apart from `subscriptions` and `hooks`, which read them through the `WebhookFields`/`WebhookChanges`
protocols, so that the handlers that only read, delete or deliver do not load the rules.
"""

from __future__ import annotations

from synapse.core.settings import get_settings
from synapse.core.validation import Body, Invalid, Rule, accepts, whole_numbers_pattern
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


# The shape `ssrf.parse` takes (https, a host name, a port from 1 to 65535, no space or control
# character) in the OpenAPI document; whether the host resolves to public addresses only is known
# when the URL is checked (a 422 naming the address otherwise).
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = f"{_LABEL}(?:\\.{_LABEL})*\\.?"
_PORT = f"(?::{whole_numbers_pattern(65535)})?"
_REST = "(?:[/?#][^\\x00-\\x20\\x7f]*)?"  # path, query and fragment: no space or control character
URL_PATTERN = f"^https://{_HOST}{_PORT}{_REST}$"
URL = Rule(
    check=_check_url_shape,
    schema={
        "pattern": URL_PATTERN,
        "maxLength": ssrf.URL_MAX_CHARS,
        "description": "An https URL whose host resolves to public addresses only.",
    },
)
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
