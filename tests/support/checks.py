"""Assertions on SPEC's error body, and the credentials a test speaks with."""

from __future__ import annotations

from typing import Any

from infra.gateway import HttpResponse
from tests.support.api import MindHandle


def as_user(mind: MindHandle) -> dict[str, Any]:
    """Call keyword arguments for the mind's owner addressing it with X-Mind-Id."""
    return {"token": mind.jwt, "headers": {"X-Mind-Id": mind.id}}


def as_agent(mind: MindHandle) -> dict[str, Any]:
    """Call keyword arguments for an agent holding the mind's first Mind Key."""
    return {"token": mind.key}


def ok(answer: HttpResponse, status: int = 200) -> dict[str, Any]:
    """The JSON of an answer that must have `status`."""
    assert answer.status == status, answer.text
    body: dict[str, Any] = answer.json()
    return body


def assert_error_shape(response: HttpResponse) -> dict[str, Any]:
    """The body is SPEC §3's error object; returns its `error` part."""
    body = response.json()
    assert set(body) == {"error", "request_id"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, body
    assert isinstance(error["code"], str) and error["code"], body
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["details"], list), body
    assert isinstance(body["request_id"], str) and body["request_id"], body
    assert response.headers.get("Content-Type", "").startswith("application/json"), response.headers
    return dict(error)


def assert_error(
    response: HttpResponse, status: int, *, field: str | None = None, rule: str | None = None
) -> dict[str, Any]:
    """An error of this status in SPEC's shape; with `field`, a detail names that field (and rule)."""
    assert response.status == status, f"{response.status}: {response.text}"
    error = assert_error_shape(response)
    if status == 401:
        assert response.headers.get("WWW-Authenticate", "").startswith("Bearer"), response.headers
    if field is not None:
        named = [d for d in error["details"] if d.get("field") == field]
        assert named, f"no detail names {field!r}: {error}"
        if rule is not None:
            assert any(d.get("rule") == rule for d in named), f"{field!r} is not flagged {rule!r}: {error}"
        assert field in error["message"], f"the message does not name {field!r}: {error['message']}"
    return error
