"""The sample events in events/ (one per function, for `sam local invoke <Function> -e events/<dir>.json`)
and helpers that fill their placeholder ids with real ones, so tests invoke handlers with exactly the
events the repository ships.

The files are generated from `SAMPLES` below; after changing a sample, rewrite them with
`PYTHONPATH=layers/synapse .venv/bin/python -m tests.support.events`. A test checks they match.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from synapse.auth.principal import Principal
from synapse.core.settings import DEV_JWT_SECRET
from synapse.memory.kinds import Source
from synapse.webhooks import signing

ROOT = Path(__file__).resolve().parents[2]
EVENTS_DIR = ROOT / "events"

# Placeholders: shaped like real ids (prefix + 22 URL-safe characters), unmistakably examples.
EXAMPLE_USER = "user-example"
EXAMPLE_MIND_ID = "m_exampleMind00000000000"
EXAMPLE_KEY_ID = "key_exampleKey000000000000"
EXAMPLE_MEMORY_ID = "mem_exampleMemory000000000"
EXAMPLE_MIND_KEY = "mk_example" + "0" * 36
EXAMPLE_WEBHOOK_ID = "wh_exampleWebhook00000000"
EXAMPLE_HOOK_ID = "hook_exampleHook0000000000"
EXAMPLE_PROPOSAL_ID = "prop_0006448e0f5c0000exampleProp"
EXAMPLE_CLIENT_ID = "oc_exampleClient000000000"
EXAMPLE_REQUEST_ID = "oar_exampleRequest0000000"
EXAMPLE_GRANT_ID = "grant_exampleGrant0000000"
EXAMPLE_MEMBER = "user-teammate"
EXAMPLE_INVITATION_ID = "inv_exampleInvitation00000"
EXAMPLE_INVITATION_TOKEN = "minv_example" + "0" * 36
EXAMPLE_HOOK_SECRET = "whsec_example" + "0" * 36
# Signed with the local dev secret (settings.DEV_JWT_SECRET): valid only where that secret is in use.
EXAMPLE_JWT = jwt.encode(
    {"sub": EXAMPLE_USER, "iat": 1796025600, "exp": 4102444800}, DEV_JWT_SECRET, algorithm="HS256"
)

API_ID = "abcdef1234"
ACCOUNT_ID = "123456789012"
HOST = f"{API_ID}.execute-api.us-east-1.amazonaws.com"
REQUEST_TIME = "30/Nov/2026:08:00:00 +0000"
REQUEST_EPOCH_MS = 1796025600000


@dataclass(frozen=True)
class Sample:
    """One request a function serves: route, placeholder path values, credential and payload."""

    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    as_agent: bool = False
    body: dict[str, Any] | None = None
    query: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    # A route without the authorizer (an inbound hook): no credential, signed with the hook's secret.
    hook_signed: bool = False
    # A public route that needs no credential at all (the console's files).
    public: bool = False

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def raw_path(self) -> str:
        path = self.path
        for name, value in self.params.items():
            path = path.replace("{" + name + "}", value).replace("{" + name + "+}", value)
        return path


MIND = {"mind_id": EXAMPLE_MIND_ID}
MEMORY = {"id": EXAMPLE_MEMORY_ID}
ADDRESS_MIND = {"x-mind-id": EXAMPLE_MIND_ID}

SAMPLES: dict[str, Sample] = {
    "create_mind": Sample("POST", "/minds", body={"name": "Michael's Mind"}),
    "list_minds": Sample("GET", "/minds"),
    "get_mind": Sample("GET", "/minds/{mind_id}", MIND),
    "rename_mind": Sample("PATCH", "/minds/{mind_id}", MIND, body={"name": "Michael's Work Mind"}),
    "delete_mind": Sample("DELETE", "/minds/{mind_id}", MIND),
    "create_key": Sample("POST", "/minds/{mind_id}/keys", MIND, body={"label": "claude-desktop"}),
    "list_keys": Sample("GET", "/minds/{mind_id}/keys", MIND),
    "revoke_key": Sample("DELETE", "/minds/{mind_id}/keys/{key_id}", {**MIND, "key_id": EXAMPLE_KEY_ID}),
    "mind_audit": Sample("GET", "/minds/{mind_id}/audit", MIND, query="limit=20"),
    "backup_mind": Sample("GET", "/minds/{mind_id}/backup", MIND, query="limit=2000"),
    "restore_mind": Sample(
        "POST",
        "/minds/{mind_id}/restore",
        MIND,
        query="last=true",
        headers={"content-type": "application/x-ndjson"},
    ),
    "store_memory": Sample(
        "POST",
        "/memory",
        as_agent=True,
        body={
            "category": "project",
            "key": "synapse_status",
            "content": "v1.5.0 deployed, working on v1.6.0 docs",
            "tags": ["synapse", "deployment"],
            "priority": "high",
        },
    ),
    "store_memory_batch": Sample(
        "POST",
        "/memory/batch",
        as_agent=True,
        headers={"idempotency-key": "import-2026-11-30-0001"},
        body={
            "memories": [
                {"category": "fact", "key": "home_city", "content": "Lives in Berlin"},
                {"category": "preference", "key": "editor", "content": "Uses Neovim", "tags": ["tools"]},
            ]
        },
    ),
    "list_memories": Sample(
        "GET", "/memory", query="category=preference&tag=communication&limit=20", headers=ADDRESS_MIND
    ),
    "get_memory": Sample("GET", "/memory/{id}", MEMORY, as_agent=True),
    "update_memory": Sample(
        "PUT",
        "/memory/{id}",
        MEMORY,
        body={"content": "Prefers concise technical responses with code", "tags": ["communication", "style"]},
        headers={**ADDRESS_MIND, "if-match": "1"},
    ),
    "delete_memory": Sample("DELETE", "/memory/{id}", MEMORY, as_agent=True),
    "verify_memory": Sample("POST", "/memory/{id}/verify", MEMORY, headers=ADDRESS_MIND),
    "memory_history": Sample("GET", "/memory/{id}/history", MEMORY, as_agent=True, query="limit=20"),
    "similar_memories": Sample("GET", "/memory/{id}/similar", MEMORY, as_agent=True),
    "restore_memory": Sample(
        "POST", "/memory/{id}/restore", MEMORY, headers=ADDRESS_MIND, body={"version": 1}
    ),
    "list_proposals": Sample("GET", "/proposals", query="status=pending&limit=20", headers=ADDRESS_MIND),
    "get_proposal": Sample("GET", "/proposals/{id}", {"id": EXAMPLE_PROPOSAL_ID}, as_agent=True),
    "accept_proposal": Sample(
        "POST", "/proposals/{id}/accept", {"id": EXAMPLE_PROPOSAL_ID}, headers=ADDRESS_MIND
    ),
    "reject_proposal": Sample(
        "POST", "/proposals/{id}/reject", {"id": EXAMPLE_PROPOSAL_ID}, headers=ADDRESS_MIND
    ),
    "recall": Sample("GET", "/memory/recall", as_agent=True, query="limit=50&max_chars=8000"),
    "by_tag": Sample("GET", "/memory/by-tag", query="tag=communication&limit=20", headers=ADDRESS_MIND),
    "expiring": Sample("GET", "/memory/expiring", as_agent=True, query="within=7d&limit=20"),
    "create_webhook": Sample(
        "POST",
        "/minds/{mind_id}/webhooks",
        MIND,
        body={
            "url": "https://agents.example.com/synapse/events",
            "events": ["memory.created", "memory.updated"],
        },
    ),
    "list_webhooks": Sample("GET", "/minds/{mind_id}/webhooks", MIND),
    "update_webhook": Sample(
        "PATCH",
        "/minds/{mind_id}/webhooks/{webhook_id}",
        {**MIND, "webhook_id": EXAMPLE_WEBHOOK_ID},
        body={"events": ["memory.created", "memory.deleted", "memory.expiring"], "enabled": True},
    ),
    "delete_webhook": Sample(
        "DELETE", "/minds/{mind_id}/webhooks/{webhook_id}", {**MIND, "webhook_id": EXAMPLE_WEBHOOK_ID}
    ),
    "test_webhook": Sample(
        "POST", "/minds/{mind_id}/webhooks/{webhook_id}/test", {**MIND, "webhook_id": EXAMPLE_WEBHOOK_ID}
    ),
    "list_deliveries": Sample(
        "GET",
        "/minds/{mind_id}/webhooks/{webhook_id}/deliveries",
        {**MIND, "webhook_id": EXAMPLE_WEBHOOK_ID},
        query="limit=20",
    ),
    "create_hook": Sample("POST", "/minds/{mind_id}/hooks", MIND, body={"label": "voice-bot"}),
    "list_hooks": Sample("GET", "/minds/{mind_id}/hooks", MIND),
    "delete_hook": Sample("DELETE", "/minds/{mind_id}/hooks/{hook_id}", {**MIND, "hook_id": EXAMPLE_HOOK_ID}),
    "rotate_hook_secret": Sample(
        "POST",
        "/minds/{mind_id}/hooks/{hook_id}/rotate",
        {**MIND, "hook_id": EXAMPLE_HOOK_ID},
        body={"grace_seconds": 3600},
    ),
    # Signed at the sample's request time: a live deployment answers 401 (outside the 5-minute
    # tolerance) until the test re-signs it with a real hook's secret.
    "receive_hook": Sample(
        "POST",
        "/hooks/{hook_id}",
        {"hook_id": EXAMPLE_HOOK_ID},
        hook_signed=True,
        headers={"idempotency-key": "call-2026-11-30-0001"},
        body={
            "memories": [
                {
                    "category": "preference",
                    "key": "callback_time",
                    "content": "Prefers calls after 17:00 on weekdays",
                    "tags": ["phone", "schedule"],
                },
                {"category": "fact", "key": "home_city", "content": "Lives in Berlin", "confidence": 0.9},
            ]
        },
    ),
    "console": Sample("GET", "/console/{proxy+}", {"proxy": "app.js"}, public=True),
    "console_page": Sample("GET", "/console", public=True),
    "openapi": Sample("GET", "/openapi.json", public=True),
    "mcp": Sample(
        "POST",
        "/mcp",
        as_agent=True,
        headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"},
        body={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "What coffee does he drink?"}},
        },
    ),
    "mcp_get": Sample("GET", "/mcp", as_agent=True, headers={"accept": "text/event-stream"}),
    "mcp_delete": Sample("DELETE", "/mcp", as_agent=True),
    "oauth_metadata": Sample("GET", "/.well-known/oauth-authorization-server", public=True),
    "oauth_metadata_resource": Sample("GET", "/.well-known/oauth-protected-resource/mcp", public=True),
    "oauth_metadata_resource_root": Sample("GET", "/.well-known/oauth-protected-resource", public=True),
    "oauth_register": Sample(
        "POST",
        "/oauth/register",
        public=True,
        body={"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]},
    ),
    "oauth_authorize": Sample(
        "GET",
        "/oauth/authorize",
        public=True,
        query=(
            f"response_type=code&client_id={EXAMPLE_CLIENT_ID}"
            "&redirect_uri=https%3A%2F%2Fclaude.ai%2Fapi%2Fmcp%2Fauth_callback&state=st4te"
            "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"
            f"&scope=read+write&resource=https%3A%2F%2F{HOST}%2Fmcp"
        ),
    ),
    "oauth_token": Sample(
        "POST",
        "/oauth/token",
        public=True,
        body={
            "grant_type": "authorization_code",
            "code": "oac_example" + "0" * 32,
            "client_id": EXAMPLE_CLIENT_ID,
            "redirect_uri": "https://claude.ai/api/mcp/auth_callback",
            "code_verifier": "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
        },
    ),
    "oauth_revoke": Sample("POST", "/oauth/revoke", public=True, body={"token": "ort_example" + "0" * 32}),
    "get_oauth_request": Sample("GET", "/oauth/requests/{request_id}", {"request_id": EXAMPLE_REQUEST_ID}),
    "decide_oauth_request": Sample(
        "POST",
        "/oauth/requests/{request_id}",
        {"request_id": EXAMPLE_REQUEST_ID},
        body={"approve": True, "mind_id": EXAMPLE_MIND_ID, "scopes": ["read", "write"]},
    ),
    "list_grants": Sample("GET", "/minds/{mind_id}/grants", MIND),
    "revoke_grant": Sample(
        "DELETE", "/minds/{mind_id}/grants/{grant_id}", {**MIND, "grant_id": EXAMPLE_GRANT_ID}
    ),
    "list_members": Sample("GET", "/minds/{mind_id}/members", MIND),
    "update_member": Sample(
        "PATCH",
        "/minds/{mind_id}/members/{user_id}",
        {**MIND, "user_id": EXAMPLE_MEMBER},
        body={"role": "reviewer"},
    ),
    "remove_member": Sample(
        "DELETE", "/minds/{mind_id}/members/{user_id}", {**MIND, "user_id": EXAMPLE_MEMBER}
    ),
    "transfer_ownership": Sample(
        "POST", "/minds/{mind_id}/transfer", MIND, body={"user_id": EXAMPLE_MEMBER, "keep_role": "reviewer"}
    ),
    "create_invitation": Sample(
        "POST", "/minds/{mind_id}/invitations", MIND, body={"role": "editor", "email": "sam@example.com"}
    ),
    "list_invitations": Sample("GET", "/minds/{mind_id}/invitations", MIND),
    "revoke_invitation": Sample(
        "DELETE",
        "/minds/{mind_id}/invitations/{invitation_id}",
        {**MIND, "invitation_id": EXAMPLE_INVITATION_ID},
    ),
    "answer_invitation": Sample("POST", "/invitations/accept", body={"token": EXAMPLE_INVITATION_TOKEN}),
    "answer_invitation_preview": Sample(
        "POST", "/invitations/preview", body={"token": EXAMPLE_INVITATION_TOKEN}
    ),
    "answer_invitation_decline": Sample(
        "POST", "/invitations/decline", body={"token": EXAMPLE_INVITATION_TOKEN}
    ),
}

# A function serving several routes has one sample per extra route, named here by its route key.
ROUTE_SAMPLES = {
    "GET /console": "console_page",
    "GET /mcp": "mcp_get",
    "DELETE /mcp": "mcp_delete",
    "GET /.well-known/oauth-protected-resource/mcp": "oauth_metadata_resource",
    "GET /.well-known/oauth-protected-resource": "oauth_metadata_resource_root",
    "POST /invitations/preview": "answer_invitation_preview",
    "POST /invitations/decline": "answer_invitation_decline",
}

# The authorizer sees every request before its handler (never the body); its sample is a person
# listing a mind's memories with a JWT.
AUTHORIZER_SAMPLE = Sample("GET", "/memory", query="limit=20", headers=ADDRESS_MIND)


def _principal(sample: Sample) -> dict[str, str]:
    if sample.as_agent:
        return Principal(source=Source.AGENT, key_id=EXAMPLE_KEY_ID, mind_id=EXAMPLE_MIND_ID).to_context()
    return Principal(source=Source.USER, user_id=EXAMPLE_USER).to_context()


def _headers(sample: Sample, body: str | None) -> dict[str, str]:
    token = EXAMPLE_MIND_KEY if sample.as_agent else EXAMPLE_JWT
    headers = {
        "accept": "application/json",
        **({} if sample.hook_signed or sample.public else {"authorization": f"Bearer {token}"}),
        "host": HOST,
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-674ac600-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.10",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
        **sample.headers,
    }
    if body is not None:
        headers["content-type"] = "application/json"
        headers["content-length"] = str(len(body.encode("utf-8")))
    if sample.hook_signed:
        signed = (body or "").encode("utf-8")
        headers["synapse-signature"] = signing.header_value(
            [EXAMPLE_HOOK_SECRET], signed, REQUEST_EPOCH_MS // 1000
        )
    return dict(sorted(headers.items()))


def _request_context(sample: Sample) -> dict[str, Any]:
    return {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": HOST,
        "domainPrefix": API_ID,
        "http": {
            "method": sample.method,
            "path": sample.raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.10",
            "userAgent": "curl/8.5.0",
        },
        "requestId": "CXQ3ZhDuoAMEMyQ=",
        "routeKey": sample.route_key,
        "stage": "$default",
        "time": REQUEST_TIME,
        "timeEpoch": REQUEST_EPOCH_MS,
    }


def _query_parameters(query: str) -> dict[str, str] | None:
    pairs = [part.split("=", 1) for part in query.split("&") if part]
    return {name: value for name, value in pairs} or None


def handler_event(sample: Sample) -> dict[str, Any]:
    """An HTTP API payload-2.0 event as a function behind the Lambda authorizer receives it."""
    body = json.dumps(sample.body, ensure_ascii=False) if sample.body is not None else None
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": sample.route_key,
        "rawPath": sample.raw_path,
        "rawQueryString": sample.query,
        "headers": _headers(sample, body),
    }
    if sample.query:
        event["queryStringParameters"] = _query_parameters(sample.query)
    event["requestContext"] = _request_context(sample)
    if not (sample.hook_signed or sample.public):
        event["requestContext"]["authorizer"] = {"lambda": _principal(sample)}
    if sample.params:
        event["pathParameters"] = dict(sample.params)
    if body is not None:
        event["body"] = body
    event["isBase64Encoded"] = False
    return event


def authorizer_event(sample: Sample = AUTHORIZER_SAMPLE) -> dict[str, Any]:
    """A payload-2.0 REQUEST authorizer event (simple responses) for the same request."""
    event: dict[str, Any] = {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": f"arn:aws:execute-api:us-east-1:{ACCOUNT_ID}:{API_ID}/$default/"
        f"{sample.method}{sample.raw_path}",
        "routeKey": sample.route_key,
        "rawPath": sample.raw_path,
        "rawQueryString": sample.query,
        "headers": _headers(sample, None),
    }
    if sample.query:
        event["queryStringParameters"] = _query_parameters(sample.query)
    event["requestContext"] = _request_context(sample)
    event["pathParameters"] = dict(sample.params)
    event["stageVariables"] = {}
    return event


def default_route_event(sample: Sample = Sample("DELETE", "/minds")) -> dict[str, Any]:
    """What the `$default` route (no authorizer) receives for a request no route matches."""
    event = handler_event(sample)
    event["routeKey"] = event["requestContext"]["routeKey"] = "$default"
    event["requestContext"].pop("authorizer", None)
    return event


def generated() -> dict[str, dict[str, Any]]:
    """Every sample event by function directory name."""
    samples = {name: handler_event(s) for name, s in SAMPLES.items()}
    return {"authorizer": authorizer_event(), **samples, "route_not_found": default_route_event()}


def render(event: dict[str, Any]) -> str:
    return json.dumps(event, indent=2, ensure_ascii=False) + "\n"


def load(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text())
    return event


def fill(event: dict[str, Any], replacements: dict[str, str]) -> dict[str, Any]:
    """The event with each placeholder (a key of `replacements`) swapped for a real value.

    The content-length header is recomputed, since a filled body may change length.
    """
    text = json.dumps(event)
    for placeholder, real in replacements.items():
        text = text.replace(placeholder, real)
    filled: dict[str, Any] = json.loads(text)
    if filled.get("body") is not None:
        filled["headers"]["content-length"] = str(len(filled["body"].encode("utf-8")))
    return filled


def without_authorizer(event: dict[str, Any]) -> dict[str, Any]:
    """What the authorizer receives for a request: the handler event minus the authorizer's context."""
    copy = json.loads(json.dumps(event))
    copy["requestContext"].pop("authorizer", None)
    copy.update({"type": "REQUEST"})
    return copy


def with_principal(event: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    copy = json.loads(json.dumps(event))
    copy["requestContext"]["authorizer"] = {"lambda": context}
    return copy


def write_all(directory: Path = EVENTS_DIR) -> list[Path]:
    directory.mkdir(exist_ok=True)
    written = []
    for name, event in generated().items():
        path = directory / f"{name}.json"
        path.write_text(render(event))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all():
        print(path.relative_to(ROOT))
