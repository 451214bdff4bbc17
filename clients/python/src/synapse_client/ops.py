"""Every API operation, written once: each function takes the operation's arguments and returns
the `Call` that performs it. `Synapse` and `AsyncSynapse` expose each as a method of the same name
(docs/api.md is the reference for what the server does with them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from enum import Enum
from typing import Any, Final

import httpx

from synapse_client._core import MIND, Call, escape, model, nothing, page, text
from synapse_client.models import (
    AuditEvent,
    BackupPage,
    BatchAnswer,
    CreatedMind,
    Hook,
    Memory,
    Mind,
    MindKey,
    Page,
    Proposal,
    ProposalDecision,
    Recall,
    RecallText,
    RestoreStatus,
    Revision,
    SearchHit,
    SearchPage,
    SimilarMemories,
    Webhook,
    WebhookDelivery,
    WebhookTest,
)


class _Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET  # "leave this field as it is" in `update` (None clears expires_at)
type Categories = str | Sequence[str] | None


def _mind(mind_id: str | None) -> str:
    return escape(mind_id) if mind_id else MIND


def _stored(response: httpx.Response) -> Memory:
    """A write's answer: the memory, or (202) the memory as it stays while the write waits as a
    proposal for a person's review; its `pending_proposal` then names the proposal."""
    body = response.json()
    return Memory.model_validate(body["memory"] if response.status_code == 202 else body)


def _categories(category: Categories) -> list[str] | None:
    if category is None:
        return None
    return [category] if isinstance(category, str) else list(category)


# ---------------------------------------------------------------- memories (Mind Key or JWT)


def remember(
    category: str | None = None,
    key: str | None = None,
    content: str | None = None,
    *,
    tags: list[str] | None = None,
    priority: str | None = None,
    confidence: float | None = None,
    expires_at: str | None = None,
    occurred_at: str | None = None,
    supersedes: list[str] | None = None,
) -> Call[Memory]:
    """Store a memory (`POST /memory`): created, or replaced when (category, key) exists. An agent's
    change to a verified memory may wait for review instead: then the memory comes back unchanged,
    its `pending_proposal` naming the proposal. `remember(content="…")` alone stores a note whose
    key the server derives from the content (the same text again replaces it). `occurred_at`: when
    the event happened or was said (a date "2026-12-09", or a timestamp with a zone), if not when it
    is stored. `supersedes`: ids of older memories this one replaces (kept, marked `superseded_by`,
    out of recall and search)."""
    if content is None:
        raise TypeError("remember: content is required")
    body: dict[str, Any] = {"content": content}
    optional = {
        "category": category,
        "key": key,
        "tags": tags,
        "priority": priority,
        "confidence": confidence,
        "expires_at": expires_at,
        "occurred_at": occurred_at,
        "supersedes": supersedes,
    }
    body.update({name: value for name, value in optional.items() if value is not None})
    return Call("POST", "/memory", _stored, body=body, idempotent=True)


def remember_batch(
    memories: list[dict[str, Any]], *, idempotency_key: str | None = None
) -> Call[BatchAnswer]:
    """Store 1-100 memories in one request (`POST /memory/batch`): one result per item, in order."""
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return Call(
        "POST",
        "/memory/batch",
        model(BatchAnswer),
        body={"memories": memories},
        headers=headers,
        idempotent=idempotency_key is not None,
    )


def get(memory_id: str) -> Call[Memory]:
    """One memory by id (`GET /memory/{id}`), expired ones included."""
    return Call("GET", f"/memory/{escape(memory_id)}", model(Memory))


def update(
    memory_id: str,
    *,
    content: str | _Unset = UNSET,
    tags: list[str] | _Unset = UNSET,
    priority: str | _Unset = UNSET,
    confidence: float | _Unset = UNSET,
    expires_at: str | _Unset | None = UNSET,
    occurred_at: str | _Unset | None = UNSET,
    if_match: int | None = None,
    supersedes: list[str] | _Unset = UNSET,
) -> Call[Memory]:
    """Change some fields (`PUT /memory/{id}`); `expires_at=None` or `occurred_at=None` clears it;
    `if_match` = version; `supersedes`: ids of older memories this one replaces."""
    fields = {
        "content": content,
        "tags": tags,
        "priority": priority,
        "confidence": confidence,
        "expires_at": expires_at,
        "occurred_at": occurred_at,
        "supersedes": supersedes,
    }
    body = {name: value for name, value in fields.items() if value is not UNSET}
    headers = {"If-Match": str(if_match)} if if_match is not None else {}
    return Call("PUT", f"/memory/{escape(memory_id)}", _stored, body=body, headers=headers)


def _forgotten(response: httpx.Response) -> Memory | None:
    """None: deleted (204). A memory (202): an agent's delete of a verified memory waits as a
    proposal for a person's review, and the memory stays as returned (`pending_proposal` names it)."""
    return _stored(response) if response.status_code == 202 else None


def forget(memory_id: str) -> Call[Memory | None]:
    """Delete a memory for good (`DELETE /memory/{id}`); see `_forgotten` for what it returns."""
    return Call("DELETE", f"/memory/{escape(memory_id)}", _forgotten)


def similar(memory_id: str) -> Call[SimilarMemories]:
    """The memories a stored one may replace (`GET /memory/{id}/similar`), e.g. to mark them with
    `update(memory_id, supersedes=[...])`; needs the `read` scope."""
    return Call("GET", f"/memory/{escape(memory_id)}/similar", model(SimilarMemories))


def verify(memory_id: str) -> Call[Memory]:
    """A person vouches for a memory (`POST /memory/{id}/verify`; JWT only)."""
    return Call("POST", f"/memory/{escape(memory_id)}/verify", model(Memory), idempotent=True)


def list_memories(
    *,
    category: str | None = None,
    tag: str | None = None,
    priority: str | None = None,
    source: str | None = None,
    verified: bool | None = None,
    include_expired: bool = False,
    after: str | None = None,
    before: str | None = None,
    updated_after: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    include_superseded: bool = False,
) -> Call[Page[Memory]]:
    """One page of memories, newest first (`GET /memory`). `after`/`before` (dates or timestamps with
    a zone, inclusive) select by event time (occurred_at, else created_at), newest event first;
    `updated_after` lists what changed since, newest change first; `include_superseded`: also the
    ones a newer memory replaced (marked `superseded_by`)."""
    params = {
        "category": category,
        "tag": tag,
        "priority": priority,
        "source": source,
        "verified": verified,
        "include_expired": include_expired or None,
        "after": after,
        "before": before,
        "updated_after": updated_after,
        "include_superseded": include_superseded or None,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/memory", page(Memory, "memories"), params=params)


def _moment(now: str | date | None) -> str | None:
    """`now=` as sent: a date or a datetime in ISO 8601 (a naive datetime is the server's to refuse)."""
    return now if now is None or isinstance(now, str) else now.isoformat()


def _recall_params(
    category: Categories,
    tag: str | None,
    limit: int | None,
    max_chars: int | None,
    query: str | None,
    after: str | None = None,
    before: str | None = None,
    include_superseded: bool = False,
    now: str | date | None = None,
    tz: str | None = None,
) -> dict[str, Any]:
    return {
        "category": _categories(category),
        "tag": tag,
        "limit": limit,
        "max_chars": max_chars,
        "q": query or None,
        "after": after,
        "before": before,
        "include_superseded": include_superseded or None,
        "now": _moment(now),
        "tz": tz,
    }


def recall(
    *,
    category: Categories = None,
    tag: str | None = None,
    limit: int | None = None,
    max_chars: int | None = None,
    query: str | None = None,
    after: str | None = None,
    before: str | None = None,
    include_superseded: bool = False,
    now: str | date | None = None,
    tz: str | None = None,
) -> Call[RecallText]:
    """The plain-text recall an agent pulls into its context (`GET /memory/recall`). `query`: the
    user's message or the task (at most 1000 characters); the memories most relevant to it come
    right after the critical ones. `now` (a date, or a datetime with its zone: replaying another
    moment) and `tz` (the user's IANA zone, e.g. "Europe/Berlin"; UTC by default): what "Coming up"
    and time words in `query` ("next week") count from."""
    params = _recall_params(
        category, tag, limit, max_chars, query, after, before, include_superseded, now, tz
    )
    return Call("GET", "/memory/recall", lambda response: RecallText(text=text(response)), params=params)


def recall_json(
    *,
    category: Categories = None,
    tag: str | None = None,
    limit: int | None = None,
    max_chars: int | None = None,
    query: str | None = None,
    after: str | None = None,
    before: str | None = None,
    include_superseded: bool = False,
    now: str | date | None = None,
    tz: str | None = None,
) -> Call[Recall]:
    """Recall's selection as JSON (`GET /memory/recall?format=json`); with `query`, `relevant` lists
    the ids of the memories placed for it. `now`/`tz` as in `recall`."""
    params = _recall_params(
        category, tag, limit, max_chars, query, after, before, include_superseded, now, tz
    )
    params["format"] = "json"
    return Call("GET", "/memory/recall", model(Recall), params=params)


def by_tag(
    tag: str,
    *,
    category: Categories = None,
    include_expired: bool = False,
    after: str | None = None,
    before: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    include_superseded: bool = False,
) -> Call[Page[Memory]]:
    """Memories carrying a tag, in recall order (`GET /memory/by-tag`); `after`/`before` as in
    `list_memories`."""
    params = {
        "tag": tag,
        "category": _categories(category),
        "include_expired": include_expired or None,
        "after": after,
        "before": before,
        "include_superseded": include_superseded or None,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/memory/by-tag", page(Memory, "memories"), params=params)


def expiring(
    *,
    within: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    include_superseded: bool = False,
) -> Call[Page[Memory]]:
    """Memories expiring within a window such as "24h" or "7d", soonest first (`GET /memory/expiring`)."""
    params = {
        "within": within,
        "limit": limit,
        "cursor": cursor,
        "include_superseded": include_superseded or None,
    }
    return Call("GET", "/memory/expiring", page(Memory, "memories"), params=params)


def search(
    query: str,
    *,
    tag: str | None = None,
    category: str | None = None,
    priority: str | None = None,
    include_expired: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
    mode: str | None = None,
    after: str | None = None,
    before: str | None = None,
    include_superseded: bool = False,
    now: str | date | None = None,
    tz: str | None = None,
) -> Call[SearchPage]:
    """Search by words and meaning, best match first (`GET /memory/search`); new writes show up
    after indexing.

    `query` is a question in the agent's own words ("What coffee does he drink?") or keywords: stop
    words are ignored, inflections match, memories matching more of its terms rank first, and
    paraphrases match by meaning ("who is his partner?" finds "Wife is Anna"). Exact syntax keeps
    its meaning (and is lexical): "a phrase", prefix*, AND, OR, NOT, parentheses, +required. The
    page's `terms` are the terms the query was read as; each hit's `matched` and `coverage` say how
    much of them it matched, `similarity` how close it is in meaning. `mode`: "hybrid" (the
    server's default), "lexical" (words only) or "semantic" (meaning only). `after`/`before` (dates
    or timestamps with a zone, inclusive) keep the memories whose occurred_at, else created_at, falls
    in the window, filtered inside the index (never after a top-k). Time words in the query ("next
    week", "on Friday") favour the memories dated then, counted from `now` (a date, or a datetime
    with its zone; default: the server's clock) in `tz` (the user's IANA zone; UTC by default)."""
    params = {
        "q": query,
        "mode": mode,
        "tag": tag,
        "category": category,
        "priority": priority,
        "include_expired": include_expired or None,
        "after": after,
        "before": before,
        "include_superseded": include_superseded or None,
        "now": _moment(now),
        "tz": tz,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/memory/search", _search_page, params=params)


def _search_page(response: httpx.Response) -> SearchPage:
    body = response.json()
    hits = [SearchHit.model_validate(item) for item in body["results"]]
    terms = [str(term) for term in body.get("terms") or []]
    return SearchPage(hits, body.get("next_cursor"), terms, body.get("mode"))


# ---------------------------------------------------------------- history and proposals


def history(memory_id: str, *, limit: int | None = None, cursor: str | None = None) -> Call[Page[Revision]]:
    """A memory's revisions, newest first (`GET /memory/{id}/history`)."""
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"/memory/{escape(memory_id)}/history", page(Revision, "revisions"), params=params)


def restore(memory_id: str, version: int) -> Call[Memory]:
    """Bring back an earlier version as a new one (`POST /memory/{id}/restore`; JWT only)."""
    return Call("POST", f"/memory/{escape(memory_id)}/restore", model(Memory), body={"version": version})


def list_proposals(
    *,
    status: str | None = None,
    memory_id: str | None = None,
    category: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[Proposal]]:
    """Agents' proposed changes to verified memories, newest first (`GET /proposals`)."""
    params = {
        "status": status,
        "memory_id": memory_id,
        "category": category,
        "limit": limit,
        "cursor": cursor,
    }
    return Call("GET", "/proposals", page(Proposal, "proposals"), params=params)


def get_proposal(proposal_id: str) -> Call[Proposal]:
    return Call("GET", f"/proposals/{escape(proposal_id)}", model(Proposal))


def accept_proposal(proposal_id: str) -> Call[ProposalDecision]:
    """Apply a pending proposal as a new, verified version (`POST /proposals/{id}/accept`; JWT only)."""
    return Call("POST", f"/proposals/{escape(proposal_id)}/accept", model(ProposalDecision))


def reject_proposal(proposal_id: str) -> Call[ProposalDecision]:
    """Turn a pending proposal down, leaving the memory as it is (`POST /proposals/{id}/reject`; JWT only)."""
    return Call("POST", f"/proposals/{escape(proposal_id)}/reject", model(ProposalDecision))


# ---------------------------------------------------------------- minds and keys (JWT only)


def create_mind(name: str) -> Call[CreatedMind]:
    """A new mind and its first Mind Key (`POST /minds`); the key's secret is shown this once."""
    return Call("POST", "/minds", model(CreatedMind), body={"name": name})


def list_minds(*, limit: int | None = None, cursor: str | None = None) -> Call[Page[Mind]]:
    """The caller's minds, oldest first (`GET /minds`)."""
    return Call("GET", "/minds", page(Mind, "minds"), params={"limit": limit, "cursor": cursor})


def get_mind(mind_id: str | None = None) -> Call[Mind]:
    """One mind (`GET /minds/{mind_id}`); by default the client's."""
    return Call("GET", f"/minds/{_mind(mind_id)}", model(Mind))


def update_mind(
    mind_id: str | None = None,
    *,
    name: str | None = None,
    agent_writes_to_verified: str | None = None,
    agent_writes_critical: str | None = None,
    history_retention_days: int | None = None,
) -> Call[Mind]:
    """Rename a mind or change its settings (`PATCH /minds/{mind_id}`)."""
    fields = {
        "name": name,
        "agent_writes_to_verified": agent_writes_to_verified,
        "agent_writes_critical": agent_writes_critical,
        "history_retention_days": history_retention_days,
    }
    body = {field: value for field, value in fields.items() if value is not None}
    return Call("PATCH", f"/minds/{_mind(mind_id)}", model(Mind), body=body, idempotent=True)


def delete_mind(mind_id: str) -> Call[None]:
    """Delete a mind with its keys, memories, hooks and index (`DELETE /minds/{mind_id}`)."""
    return Call("DELETE", f"/minds/{escape(mind_id)}", nothing)


def create_key(
    mind_id: str | None = None, *, label: str | None = None, scopes: list[str] | None = None
) -> Call[MindKey]:
    """A new Mind Key (`POST /minds/{mind_id}/keys`); its secret (`key`) is shown this once."""
    body = {name: value for name, value in {"label": label, "scopes": scopes}.items() if value is not None}
    return Call("POST", f"/minds/{_mind(mind_id)}/keys", model(MindKey), body=body)


def list_keys(
    mind_id: str | None = None, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[MindKey]]:
    """A mind's keys, without secrets (`GET /minds/{mind_id}/keys`)."""
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"/minds/{_mind(mind_id)}/keys", page(MindKey, "keys"), params=params)


def revoke_key(key_id: str, mind_id: str | None = None) -> Call[None]:
    """Revoke a Mind Key, effective on its next request (`DELETE /minds/{mind_id}/keys/{key_id}`)."""
    return Call("DELETE", f"/minds/{_mind(mind_id)}/keys/{escape(key_id)}", nothing)


def audit(
    mind_id: str | None = None, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[AuditEvent]]:
    """Who changed the mind's keys, hooks, webhooks and settings (`GET /minds/{mind_id}/audit`)."""
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"/minds/{_mind(mind_id)}/audit", page(AuditEvent, "events"), params=params)


# ---------------------------------------------------------------- hooks and webhooks (JWT only)


def create_hook(mind_id: str | None = None, *, label: str | None = None) -> Call[Hook]:
    """An inbound hook a platform delivers memories to (`POST /minds/{mind_id}/hooks`); secret shown once."""
    body = {"label": label} if label is not None else {}
    return Call("POST", f"/minds/{_mind(mind_id)}/hooks", model(Hook), body=body)


def list_hooks(
    mind_id: str | None = None, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[Hook]]:
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"/minds/{_mind(mind_id)}/hooks", page(Hook, "hooks"), params=params)


def revoke_hook(hook_id: str, mind_id: str | None = None) -> Call[None]:
    return Call("DELETE", f"/minds/{_mind(mind_id)}/hooks/{escape(hook_id)}", nothing)


def rotate_hook(hook_id: str, mind_id: str | None = None, *, grace_seconds: int | None = None) -> Call[Hook]:
    """A new secret for a hook; the old one stays valid for `grace_seconds`."""
    body = {"grace_seconds": grace_seconds} if grace_seconds is not None else {}
    return Call("POST", f"/minds/{_mind(mind_id)}/hooks/{escape(hook_id)}/rotate", model(Hook), body=body)


def create_webhook(url: str, events: list[str], mind_id: str | None = None) -> Call[Webhook]:
    """Subscribe an endpoint to memory events (`POST /minds/{mind_id}/webhooks`); secret shown once."""
    body = {"url": url, "events": events}
    return Call("POST", f"/minds/{_mind(mind_id)}/webhooks", model(Webhook), body=body)


def list_webhooks(
    mind_id: str | None = None, *, limit: int | None = None, cursor: str | None = None
) -> Call[Page[Webhook]]:
    params = {"limit": limit, "cursor": cursor}
    return Call("GET", f"/minds/{_mind(mind_id)}/webhooks", page(Webhook, "webhooks"), params=params)


def update_webhook(
    webhook_id: str,
    mind_id: str | None = None,
    *,
    url: str | None = None,
    events: list[str] | None = None,
    enabled: bool | None = None,
) -> Call[Webhook]:
    fields = {"url": url, "events": events, "enabled": enabled}
    body = {name: value for name, value in fields.items() if value is not None}
    path = f"/minds/{_mind(mind_id)}/webhooks/{escape(webhook_id)}"
    return Call("PATCH", path, model(Webhook), body=body, idempotent=True)


def delete_webhook(webhook_id: str, mind_id: str | None = None) -> Call[None]:
    return Call("DELETE", f"/minds/{_mind(mind_id)}/webhooks/{escape(webhook_id)}", nothing)


def test_webhook(webhook_id: str, mind_id: str | None = None) -> Call[WebhookTest]:
    """Send a `ping` to the webhook now and report how it went."""
    return Call("POST", f"/minds/{_mind(mind_id)}/webhooks/{escape(webhook_id)}/test", model(WebhookTest))


def webhook_deliveries(
    webhook_id: str, mind_id: str | None = None, *, limit: int | None = None
) -> Call[list[WebhookDelivery]]:
    """Recent delivery attempts of a webhook."""
    path = f"/minds/{_mind(mind_id)}/webhooks/{escape(webhook_id)}/deliveries"
    return Call(
        "GET",
        path,
        lambda response: [WebhookDelivery.model_validate(d) for d in response.json()["deliveries"]],
        params={"limit": limit},
    )


def _backup_page(response: httpx.Response) -> BackupPage:
    return BackupPage(response.content, response.headers.get("x-next-cursor"))


def backup_page(
    mind_id: str | None = None, *, cursor: str | None = None, limit: int | None = None
) -> Call[BackupPage]:
    """A page of the mind's backup (docs/backup.md): its lines, and the cursor of the next page."""
    params = {"cursor": cursor, "limit": limit}
    return Call("GET", f"/minds/{_mind(mind_id)}/backup", _backup_page, params=params)


def restore_chunk(lines: bytes, mind_id: str | None = None, *, last: bool = False) -> Call[RestoreStatus]:
    """Lines of a backup into a new or empty mind, from the line the restore stands at; resent
    safely (the restore job applies each line once)."""
    return Call(
        "POST",
        f"/minds/{_mind(mind_id)}/restore",
        model(RestoreStatus),
        params={"last": True if last else None},
        headers={"Content-Type": "application/x-ndjson"},
        idempotent=True,
        content=lines,
    )


def openapi() -> Call[dict[str, Any]]:
    """The API's OpenAPI 3.1 document (`GET /openapi.json`, public)."""
    return Call("GET", "/openapi.json", lambda response: dict(response.json()))
