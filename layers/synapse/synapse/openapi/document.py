"""The OpenAPI 3.1 document of the HTTP API, built from the code: the routes (`routes.ROUTES`, which a
test keeps equal to template.yaml), the request bodies the handlers parse (their rules, through
`core.validation`), the answer models of `synapse.openapi.schemas`, and `OPERATIONS` below (summary,
credential, answers of each operation).

`make openapi` writes it to functions/openapi/openapi.json (openapi.json at the root links to it;
`python -m synapse.openapi.document`), which the `GET /openapi.json` function serves as it is. A
test fails when a route has no operation here or the committed file differs from `render()`.

Adding a route: add its `Op` to `OPERATIONS` (OAuth's: `openapi.oauth`; backup and restore's:
`openapi.portability`; members' and invitations': `openapi.teams`; shared parameters: `openapi.params`),
then run `make openapi`. Statuses implied by the credential ("user": JWT only; "either": JWT or Mind
Key, with X-Mind-Id; "public"; "signed"), path, parameters and body are added by `parts.operation`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from synapse.api import routes
from synapse.memory.kinds import Category
from synapse.memory.model import KeyCreate, MemoryPatch, MemoryWrite, MindPatch, MindWrite
from synapse.memory.proposals import Status
from synapse.memory.restore import RestoreRequest
from synapse.openapi import integrations as I
from synapse.openapi import jsonrpc, oauth, portability, similar
from synapse.openapi import params as P
from synapse.openapi import schemas as S
from synapse.openapi import teams as T
from synapse.openapi.parts import (
    JSON,
    PAGE,
    SECURITY_SCHEMES,
    STRING,
    TEXT,
    Op,
    Param,
    enum,
    integer,
    models,
    operation,
    query,
)
from synapse.webhooks.bodies import HookRotate, HookWrite, WebhookPatch, WebhookWrite

OPERATIONS: dict[tuple[str, str], Op] = {
    ("POST", "/minds"): Op(
        "createMind",
        "Create a mind and its first Mind Key",
        "minds",
        "user",
        {201: S.NewMind},
        MindWrite,
        errors=(409,),
    ),
    ("GET", "/minds"): Op(
        "listMinds",
        "The minds you are a member of, with your role, oldest joined first",
        "minds",
        "user",
        {200: T.MindWithRolePage},
        params=PAGE,
    ),
    ("GET", "/minds/{mind_id}"): Op(
        "getMind", "One mind, with your role", "minds", "user", {200: T.MindWithRole}
    ),
    ("PATCH", "/minds/{mind_id}"): Op(
        "updateMind",
        "Rename a mind and/or change its settings",
        "minds",
        "user",
        {200: T.MindWithRole},
        MindPatch,
    ),
    ("DELETE", "/minds/{mind_id}"): Op(
        "deleteMind", "Delete a mind and everything in it", "minds", "user", {204: None}
    ),
    ("POST", "/minds/{mind_id}/keys"): Op(
        "createKey", "A new Mind Key (shown once)", "keys", "user", {201: S.NewKey}, KeyCreate
    ),
    ("GET", "/minds/{mind_id}/keys"): Op(
        "listKeys", "The mind's keys, without secrets", "keys", "user", {200: S.KeyPage}, params=PAGE
    ),
    ("DELETE", "/minds/{mind_id}/keys/{key_id}"): Op(
        "revokeKey", "Revoke a Mind Key", "keys", "user", {204: None}
    ),
    ("GET", "/minds/{mind_id}/audit"): Op(
        "listAudit",
        "Who changed the mind's keys, hooks, webhooks and settings",
        "minds",
        "user",
        {200: S.AuditPage},
        params=PAGE,
    ),
    ("POST", "/memory"): Op(
        "storeMemory",
        "Store a memory: create (201), replace by (category, key) (200) or propose the change (202)",
        "memory",
        "either",
        {200: S.StoredMemory, 201: S.StoredMemory, 202: S.Proposed},
        MemoryWrite,
    ),
    ("POST", "/memory/batch"): Op(
        "storeMemories",
        "Store 1-100 memories, each like POST /memory",
        "memory",
        "either",
        {200: S.BatchAnswer},
        S.MemoryBatch,
        (P.IDEMPOTENCY,),
    ),
    ("GET", "/memory"): Op(
        "listMemories",
        "Memories, newest first",
        "memory",
        "either",
        {200: S.MemoryPage},
        params=P.LIST_FILTERS + PAGE,
    ),
    ("GET", "/memory/{id}"): Op(
        "getMemory", "One memory (expired ones included)", "memory", "either", {200: S.Memory}
    ),
    ("PUT", "/memory/{id}"): Op(
        "updateMemory",
        "Update some fields of a memory (an agent's change to a verified one: 202, a proposal)",
        "memory",
        "either",
        {200: S.WrittenMemory, 202: S.Proposed},
        MemoryPatch,
        (P.IF_MATCH,),
        errors=(412,),
    ),
    ("DELETE", "/memory/{id}"): Op(
        "deleteMemory",
        "Delete a memory for good (an agent's delete of a verified one: 202, a proposal)",
        "memory",
        "either",
        {202: S.Proposed, 204: None},
    ),
    ("POST", "/memory/{id}/verify"): Op(
        "verifyMemory", "A person vouches for a memory", "memory", "user", {200: S.Memory}
    ),
    ("GET", "/memory/{id}/history"): Op(
        "memoryHistory",
        "A memory's revisions, newest first (a deleted memory's too)",
        "history",
        "either",
        {200: S.RevisionPage},
        params=PAGE,
    ),
    ("POST", "/memory/{id}/restore"): Op(
        "restoreMemory",
        "Bring back an earlier revision as a new version, verified by you",
        "history",
        "user",
        {200: S.Memory},
        RestoreRequest,
        errors=(409,),
    ),
    ("GET", "/proposals"): Op(
        "listProposals",
        "Agents' proposed changes to verified memories, newest first",
        "history",
        "either",
        {200: S.ProposalPage},
        params=(
            query("status", enum(Status)),
            query("memory_id", STRING),
            query("category", enum(Category)),
            *PAGE,
        ),
    ),
    ("GET", "/proposals/{id}"): Op("getProposal", "One proposal", "history", "either", {200: S.Proposal}),
    ("POST", "/proposals/{id}/accept"): Op(
        "acceptProposal",
        "Apply a proposal as a new version, verified by you (409 if the memory changed meanwhile)",
        "history",
        "user",
        {200: S.Proposed},
        errors=(409,),
    ),
    ("POST", "/proposals/{id}/reject"): Op(
        "rejectProposal",
        "Turn a proposal down; the memory stays",
        "history",
        "user",
        {200: S.Proposed},
        errors=(409,),
    ),
    ("GET", "/memory/recall"): Op(
        "recall",
        "The recall text (or JSON with format=json)",
        "memory",
        "either",
        {200: [TEXT, S.RecallJson]},
        params=P.RECALL,
        errors=(414,),  # a q of a few thousand characters, percent-encoded, can pass the URI's bound
    ),
    ("GET", "/memory/by-tag"): Op(
        "listByTag",
        "Memories carrying a tag, recall order",
        "memory",
        "either",
        {200: S.MemoryPage},
        params=(
            replace(P.TAG, required=True),
            P.CATEGORIES,
            P.INCLUDE_EXPIRED,
            P.INCLUDE_SUPERSEDED,
            *P.WINDOW,
            *PAGE,
        ),
    ),
    ("GET", "/memory/expiring"): Op(
        "listExpiring",
        "Memories expiring soon, soonest first",
        "memory",
        "either",
        {200: S.MemoryPage},
        params=(
            query("within", P.WITHIN, "30m, 24h, 7d, 2w (default 7d, at most 365d)."),
            P.INCLUDE_SUPERSEDED,
            *PAGE,
        ),
    ),
    ("GET", "/memory/search"): Op(
        "search",
        "Search by words and meaning",
        "memory",
        "either",
        {200: S.SearchPage},
        params=P.SEARCH + PAGE,
    ),
    ("POST", "/minds/{mind_id}/webhooks"): Op(
        "createWebhook",
        "Subscribe an HTTPS endpoint to the mind's events",
        "webhooks",
        "user",
        {201: I.WebhookWithSecret},
        WebhookWrite,
        errors=(409,),
    ),
    ("GET", "/minds/{mind_id}/webhooks"): Op(
        "listWebhooks",
        "The mind's webhooks, without secrets",
        "webhooks",
        "user",
        {200: I.WebhookPage},
        params=PAGE,
    ),
    ("PATCH", "/minds/{mind_id}/webhooks/{webhook_id}"): Op(
        "updateWebhook",
        "Change a webhook's url, events or enabled",
        "webhooks",
        "user",
        {200: I.Webhook},
        WebhookPatch,
    ),
    ("DELETE", "/minds/{mind_id}/webhooks/{webhook_id}"): Op(
        "deleteWebhook", "Delete a webhook", "webhooks", "user", {204: None}
    ),
    ("POST", "/minds/{mind_id}/webhooks/{webhook_id}/test"): Op(
        "testWebhook", "Send a signed ping now", "webhooks", "user", {200: I.TestOutcome}
    ),
    ("GET", "/minds/{mind_id}/webhooks/{webhook_id}/deliveries"): Op(
        "listDeliveries",
        "Recent delivery attempts, newest first",
        "webhooks",
        "user",
        {200: I.DeliveryList},
        params=(query("limit", integer(1, 100), "Default 50."),),
    ),
    ("POST", "/minds/{mind_id}/hooks"): Op(
        "createHook",
        "A new inbound hook: its URL and secret (shown once)",
        "hooks",
        "user",
        {201: I.HookWithSecret},
        HookWrite,
        errors=(409,),
    ),
    ("GET", "/minds/{mind_id}/hooks"): Op(
        "listHooks",
        "The mind's inbound hooks, without secrets",
        "hooks",
        "user",
        {200: I.HookPage},
        params=PAGE,
    ),
    ("DELETE", "/minds/{mind_id}/hooks/{hook_id}"): Op(
        "deleteHook", "Revoke an inbound hook", "hooks", "user", {204: None}
    ),
    ("POST", "/minds/{mind_id}/hooks/{hook_id}/rotate"): Op(
        "rotateHook",
        "A new hook secret; the old one lives on for grace_seconds",
        "hooks",
        "user",
        {200: I.HookWithSecret},
        HookRotate,
    ),
    ("POST", "/hooks/{hook_id}"): Op(
        "deliverToHook",
        "A platform delivers one memory or a batch (signed)",
        "hooks",
        "signed",
        {200: S.BatchAnswer},
        S.MemoryBatch,
        (
            Param(
                "Synapse-Signature", "header", STRING, "t=<unix seconds>,v1=<hex HMAC-SHA256>", required=True
            ),
            P.IDEMPOTENCY,
        ),
    ),
    ("GET", "/openapi.json"): Op("openapi", "This document", "meta", "public", {200: S.OpenApiDocument}),
    ("GET", "/console"): Op(
        "console",
        "The review console's page",
        "console",
        "public",
        {200: ["text/html"], 304: None},
        params=(P.IF_NONE_MATCH,),
    ),
    ("GET", "/console/{proxy+}"): Op(
        "consoleAsset",
        "The review console's scripts, styles, icon and config.json",
        "console",
        "public",
        {200: ["text/html", "text/javascript", "text/css", "image/svg+xml", "text/plain", JSON], 304: None},
        params=(P.IF_NONE_MATCH,),
        errors=(404,),
    ),
    ("POST", "/mcp"): Op(
        "mcp",
        "MCP Streamable HTTP, stateless: one JSON-RPC message; a notification or response is 202",
        "mcp",
        "either",
        {200: [jsonrpc.JsonRpcAnswers, "text/event-stream"], 202: None},
        jsonrpc.JsonRpcMessage,
        errors=(400, 403, 406),
        error_answer=jsonrpc.JsonRpcAnswer,
    ),
    ("GET", "/mcp"): Op(
        "mcpStream",
        "No server stream: 405 (stateless)",
        "mcp",
        "either",
        {},
        errors=(405,),
        error_answer=jsonrpc.JsonRpcAnswer,
    ),
    ("DELETE", "/mcp"): Op(
        "mcpSession",
        "No session to end: 405",
        "mcp",
        "either",
        {},
        errors=(405,),
        error_answer=jsonrpc.JsonRpcAnswer,
    ),
    **oauth.OPERATIONS,
    **portability.OPERATIONS,
    **similar.OPERATIONS,
    **T.OPERATIONS,
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document: one operation per route, in ROUTES order."""
    refs, components = models(list(OPERATIONS.values()))
    paths: dict[str, dict[str, Any]] = {}
    missing = [f"{method} {path}" for method, path in routes.ROUTES if (method, path) not in OPERATIONS]
    if missing:
        raise LookupError(f"No operation in synapse.openapi.document.OPERATIONS for {', '.join(missing)}.")
    for method, path in routes.ROUTES:
        op = OPERATIONS[(method, path)]
        paths.setdefault(path, {})[method.lower()] = operation(method, path, op, refs)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Synapse",
            "version": "1.0.0",
            "description": "Memory for LLM agents. Errors share one envelope (Error); see docs/api.md.",
        },
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": SECURITY_SCHEMES},
    }


def render() -> str:
    """The document as openapi.json holds it."""
    return json.dumps(document(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
