"""The token endpoint's two grants: an authorization code with its PKCE verifier (RFC 7636, S256
only) becomes a grant and its first tokens; a refresh token rotates both (OAuth 2.1 §4.3.1). Each
is one transaction with the use of what was presented, so a code or refresh token works once;
presented again, it revokes the grant it gave (RFC 6749 §4.1.2, OAuth 2.1 §4.3.1)."""

import base64
import hashlib
import secrets
from datetime import timedelta
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from synapse.core import clock
from synapse.core.ids import new_id
from synapse.minds import audit, tenure
from synapse.minds.keys import hash_mind_key
from synapse.oauth import clients
from synapse.oauth.errors import OAuthError
from synapse.oauth.grants import (
    ACCESS_PREFIX,
    CODE_PREFIX,
    GRANT_PREFIX,
    REFRESH_PREFIX,
    access_key,
    code_key,
    delete,
    expiring,
    grant_key,
    live,
    new_secret,
    put,
    refresh_key,
)
from synapse.oauth.revocation import revoke_reused
from synapse.storage import tables

CODE_LIFETIME = timedelta(minutes=5)
ACCESS_LIFETIME = timedelta(hours=1)
REFRESH_LIFETIME = timedelta(days=30)  # renewed by each rotation: an app in use stays connected
REFRESH_REUSED = "The refresh token was already used: the grant is revoked; connect again."
VERIFIER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class CodeGrant(NamedTuple):
    client_id: str
    client_name: str
    redirect_uri: str
    code_challenge: str
    resource: str
    mind_id: str
    scopes: tuple[str, ...]
    user_id: str
    tenure: str | None = None  # the approver's tenure as owner: the code and its grant end with it


def code_operation(grant: CodeGrant) -> tuple[str, dict[str, Any]]:
    """A new authorization code and the transaction operation that records it."""
    code, digest = new_secret(CODE_PREFIX)
    item = {
        **code_key(digest),
        **grant._asdict(),
        "scopes": list(grant.scopes),
        **expiring(clock.now(), CODE_LIFETIME),
    }
    return code, put(item)


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).decode().rstrip("=")


def _check_verifier(verifier: str, challenge: str) -> None:
    if not 43 <= len(verifier) <= 128 or not set(verifier) <= VERIFIER_CHARS:
        raise OAuthError("invalid_grant", "code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~.")
    if not secrets.compare_digest(_s256(verifier), challenge):
        raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge (PKCE S256).")


def _tokens(
    grant: dict[str, Any], scopes: list[str], moment: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, str]]:
    """A new access and refresh token for `grant`: the token answer, the operations that store
    their lookups, and their hashes (what the grant item keeps)."""
    access, access_digest = new_secret(ACCESS_PREFIX)
    refresh, refresh_digest = new_secret(REFRESH_PREFIX)
    shared = {
        "mind_id": grant["mind_id"],
        "grant_id": grant["id"],
        "resource": grant["resource"],
        **_approver(grant),
    }
    operations = [
        put({**access_key(access_digest), **shared, "scopes": scopes, **expiring(moment, ACCESS_LIFETIME)}),
        put(
            {
                **refresh_key(refresh_digest),
                **shared,
                "client_id": grant["client_id"],
                "scopes": scopes,
                **expiring(moment, REFRESH_LIFETIME),
            }
        ),
    ]
    answer = {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": int(ACCESS_LIFETIME.total_seconds()),
        "refresh_token": refresh,
        "scope": " ".join(scopes),
    }
    return answer, operations, {"access_hash": access_digest, "refresh_hash": refresh_digest}


def _check_resource(asked: str | None, bound: str) -> None:
    if asked and asked.rstrip("/") != bound:
        raise OAuthError("invalid_target", f"resource must be {bound}: the token is for that resource only.")


def _new_grant(code: dict[str, Any], client: clients.Client, moment: Any) -> dict[str, Any]:
    """The grant item an exchanged code makes (its token hashes are added by the caller)."""
    grant_id = new_id(GRANT_PREFIX)
    return {
        **grant_key(code["mind_id"], grant_id),
        "id": grant_id,
        "client_id": client.id,
        "client_name": client.name,
        "redirect_host": urlsplit(code["redirect_uri"]).netloc,
        "mind_id": code["mind_id"],
        "scopes": list(code["scopes"]),
        "resource": code["resource"],
        "user_id": code["user_id"],
        "created_at": clock.to_iso(moment),
        **({"tenure": code["tenure"]} if code.get("tenure") else {}),
    }


def _approver(item: dict[str, Any]) -> dict[str, Any]:
    """Who approved a code or grant, as each token lookup repeats it for the authorizer."""
    return {key: item[key] for key in ("user_id", "tenure") if item.get(key)}


def _check_approver(item: dict[str, Any]) -> list[dict[str, Any]]:
    """invalid_grant unless the person who approved it is still an owner in the same tenure (removed
    or demoted since: `minds.tenure`); the operation that holds the exchange or refresh to that."""
    if not tenure.holds(item["mind_id"], item.get("user_id"), item.get("tenure")):
        raise OAuthError("invalid_grant", "The person who approved this app no longer owns the mind.")
    return tenure.still(item["mind_id"], item.get("user_id"), item.get("tenure"))


def exchange_code(fields: dict[str, str]) -> dict[str, Any]:
    """`grant_type=authorization_code`: the code, its client, its redirect URI and the PKCE verifier
    → a grant and its first tokens, in one transaction with the code's use and the audit event."""
    client = clients.require(fields.get("client_id"))
    code = fields.get("code", "")
    verifier = fields.get("code_verifier", "")
    if not code or not verifier:
        raise OAuthError("invalid_request", "code and code_verifier are required.")
    digest = hash_mind_key(code)
    item = tables.get(tables.minds_table(), code_key(digest)) if code.startswith(CODE_PREFIX) else None
    if item is None or not live(item) or item["client_id"] != client.id:
        raise OAuthError(
            "invalid_grant", "The authorization code is not valid, has expired, or is another client's."
        )
    if item.get("used_by"):
        revoke_reused(item["mind_id"], str(item["used_by"]), "code_reused")
        raise OAuthError(
            "invalid_grant", "The authorization code was already used; the tokens it gave are revoked."
        )
    if "redirect_uri" in fields and fields["redirect_uri"] != item["redirect_uri"]:
        raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request's.")
    _check_resource(fields.get("resource"), item["resource"])
    _check_verifier(verifier, item["code_challenge"])
    approver = _check_approver(item)
    moment = clock.now()
    grant = _new_grant(item, client, moment)
    answer, token_operations, hashes = _tokens(grant, grant["scopes"], moment)
    target = {
        "grant_id": grant["id"],
        "client_id": client.id,
        "client_name": client.name,
        "scopes": grant["scopes"],
    }
    operations = [
        _use_once(code_key(digest), "used_by", grant["id"]),
        {
            "ConditionCheck": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(tables.mind_key(item["mind_id"])),
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
        put({**grant, **hashes}),
        *token_operations,
        clients.keep_operation(client.id),
        audit.put_operation(item["mind_id"], "grant.created", audit.by_user(item["user_id"]), target),
        *approver,
    ]
    _transact(operations, "The authorization code was already used or its mind is gone.")
    return answer


def refresh(fields: dict[str, str]) -> dict[str, Any]:
    """`grant_type=refresh_token`: rotate both tokens; a rotated refresh token presented again
    revokes the grant."""
    client = clients.require(fields.get("client_id"))
    presented = fields.get("refresh_token", "")
    digest = hash_mind_key(presented) if presented.startswith(REFRESH_PREFIX) else ""
    item = tables.get(tables.minds_table(), refresh_key(digest)) if digest else None
    if item is None or not live(item) or item["client_id"] != client.id:
        raise OAuthError("invalid_grant", "The refresh token is not valid, has expired, or was revoked.")
    if item.get("used"):
        revoke_reused(item["mind_id"], item["grant_id"], "refresh_token_reused")
        raise OAuthError("invalid_grant", REFRESH_REUSED)
    grant = tables.get(tables.minds_table(), grant_key(item["mind_id"], item["grant_id"]))
    if grant is None or grant.get("refresh_hash") != digest:
        raise OAuthError("invalid_grant", "The refresh token was revoked.")
    _check_resource(fields.get("resource"), grant["resource"])
    approver = _check_approver(grant)
    scopes = list(grant["scopes"])
    if fields.get("scope"):
        asked = set(fields["scope"].split())
        scopes = [scope for scope in scopes if scope in asked] or scopes
    answer, token_operations, hashes = _tokens(grant, scopes, clock.now())
    operations = [
        _use_once(refresh_key(digest), "used", True),
        *token_operations,
        delete(access_key(grant["access_hash"])),
        {
            "Update": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(grant_key(grant["mind_id"], grant["id"])),
                "UpdateExpression": "SET access_hash = :access, refresh_hash = :refresh",
                "ConditionExpression": "attribute_exists(pk) AND refresh_hash = :old",
                "ExpressionAttributeValues": tables.values(
                    old=digest, access=hashes["access_hash"], refresh=hashes["refresh_hash"]
                ),
            }
        },
        *approver,
    ]
    try:
        _transact(operations, "")
    except OAuthError:  # another refresh with the same token won the race: that is a reuse
        revoke_reused(item["mind_id"], item["grant_id"], "refresh_token_reused")
        raise OAuthError("invalid_grant", REFRESH_REUSED) from None
    return answer


def _use_once(key: dict[str, str], attribute: str, value: Any) -> dict[str, Any]:
    """The operation that marks a code or refresh token used, only if it was not: its one use."""
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(key),
            "UpdateExpression": f"SET {attribute} = :value",
            "ConditionExpression": f"attribute_exists(pk) AND attribute_not_exists({attribute})",
            "ExpressionAttributeValues": tables.values(value=value),
        }
    }


def _transact(operations: list[dict[str, Any]], refusal: str) -> None:
    try:
        tables.transact(operations)
    except tables.client().exceptions.TransactionCanceledException:
        raise OAuthError("invalid_grant", refusal) from None
