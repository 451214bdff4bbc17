"""HTTP glue of inbound hooks and batches: where this API answers (for a hook's absolute URL), the
form of an `Idempotency-Key` header, and how an answer kept for that key is sent. The hooks
themselves are `synapse.webhooks.hooks` and `synapse.webhooks.receive`, which never see a request."""

from __future__ import annotations

import re

from synapse.api.http import Request, Response
from synapse.auth import visibility
from synapse.auth.principal import Principal
from synapse.core.errors import BadRequest
from synapse.webhooks.idempotency import Answer

IDEMPOTENCY_KEY_MAX_CHARS = 255
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:]{2,39}\](:[0-9]{1,5})?")


def base_url(request: Request) -> str:
    """Where this API answers, so a hook's URL can be absolute; empty when the host is unknown.

    API Gateway always sends X-Forwarded-Proto; without it this is the local runner (plain http).
    """
    context = request.event.get("requestContext") or {}
    host = str(context.get("domainName") or request.headers.get("host") or "")
    if not _HOST.fullmatch(host):
        return ""
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    if forwarded:
        return f"{'http' if forwarded == 'http' else 'https'}://{host}"
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return f"{'http' if name in {'127.0.0.1', 'localhost', '[::1]'} else 'https'}://{host}"


def idempotency_key(request: Request) -> str | None:
    """The `Idempotency-Key` header: 1-255 visible ASCII characters, or None when not sent."""
    value = request.headers.get("idempotency-key")
    if value is None:
        return None
    if not 1 <= len(value) <= IDEMPOTENCY_KEY_MAX_CHARS or not all(33 <= ord(c) <= 126 for c in value):
        raise BadRequest(
            f"Idempotency-Key: must be 1-{IDEMPOTENCY_KEY_MAX_CHARS} visible ASCII characters.",
            details=[{"field": "Idempotency-Key", "rule": "format", "message": "visible ASCII, 1-255"}],
        )
    return value


def answered(answer: Answer, principal: Principal) -> Response:
    """A batch's answer as `principal` may see it (`auth.visibility`: no `similar` nor proposed content
    without `read`, a replay of another credential's answer too); `Idempotent-Replayed: true` when it
    is the one kept for a replayed key."""
    replayed = {"Idempotent-Replayed": "true"} if answer.replayed else {}
    return Response.json(visibility.shown(principal, answer.body), answer.status, replayed)
