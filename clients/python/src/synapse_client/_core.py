"""What the sync and async clients share: the description of one API call (`Call`), how a call
becomes an HTTP request for a given credential, how an answer becomes a value or an exception, and
when to retry. The two clients only send requests and sleep; everything else is here."""

from __future__ import annotations

import random
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel

from synapse_client.errors import SynapseError, error_class
from synapse_client.models import Page

VERSION = "0.1.0"
MIND = "{mind}"  # in a Call's path: the client's mind id, filled in when the call is sent
RETRY_STATUSES = frozenset({429, 502, 503, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "PUT", "DELETE"})

Params = Mapping[str, str | int | float | bool | list[str] | None]


@dataclass(frozen=True)
class Call[T]:
    """One API operation: method, path, query, body and how to read the answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Params = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool | None = None  # may a 502/503/504 be retried? (None: by method)
    content: bytes | None = None  # a body sent as it is (not JSON), e.g. a backup's lines

    def retry_on_server_error(self) -> bool:
        return self.method in IDEMPOTENT_METHODS if self.idempotent is None else self.idempotent


@dataclass(frozen=True)
class Retry:
    """When to try a call again: `attempts` more tries at most, after the server's `Retry-After`
    when it sends one, else an exponential backoff with full jitter (`backoff` doubling up to
    `max_backoff` seconds); a wait longer than `max_wait` seconds is not made (the error is raised).

    Retried: 429, and a 409 carrying Retry-After (a write that lost to busy writers and applied
    nothing, or a duplicate of a request still being answered), for any call; 502/503/504 and
    an answer that broke off or timed out only for calls safe to repeat. A connection refused (or a
    host name that does not resolve) is not retried: nothing listens there, and a user waiting on
    backoff learns that ten seconds late."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def delay(self, call: Call[Any], attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before trying `call` again after `response`, or None to stop here."""
        status = response.status_code
        told = retry_after(response)
        if attempt >= self.attempts:
            return None
        if status == 429 or (status == 409 and told is not None):
            pass
        elif status not in RETRY_STATUSES or not call.retry_on_server_error():
            return None
        wait = (
            told + random.uniform(0, min(1.0, self.backoff)) if told is not None else self._backoff(attempt)
        )
        return wait if wait <= self.max_wait else None

    def after_failure(self, call: Call[Any], attempt: int, error: httpx.TransportError) -> float | None:
        """Seconds to wait after no answer came (it broke off, timed out), or None to give up."""
        if isinstance(error, httpx.ConnectError):
            return None
        if attempt >= self.attempts or not call.retry_on_server_error():
            return None
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (delta-seconds or an HTTP date), or None."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def tls(url: str) -> ssl.SSLContext | bool:
    """What a client of `url` checks TLS certificates with. For https, httpx's default (True: the CA
    bundle, which takes a tenth of a second to load at each client's start). An http:// URL (a local
    `make run`) never opens TLS: requests go to its relative paths and redirects are not followed.
    It gets a context that trusts no certificate: it costs nothing to make, and if TLS were ever
    attempted with it, the connection would fail rather than go unverified."""
    if urlsplit(url).scheme.lower() == "http":
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


@dataclass(frozen=True)
class Credentials:
    """Who calls: an agent's Mind Key, or a person's JWT (plus the mind they address)."""

    mind_key: str | None = None
    token: str | None = None
    mind_id: str | None = None

    def __post_init__(self) -> None:
        if bool(self.mind_key) == bool(self.token):
            raise ValueError("give exactly one of mind_key (an agent) or token (a person's JWT)")

    def headers(self) -> dict[str, str]:
        secret = self.mind_key or self.token
        sent = {"Authorization": f"Bearer {secret}", "User-Agent": f"synapse-client/{VERSION}"}
        if self.token and self.mind_id:
            sent["X-Mind-Id"] = self.mind_id
        return sent

    def path(self, path: str) -> str:
        if MIND not in path:
            return path
        if not self.mind_id:
            raise SynapseError(
                "This call needs a mind id: pass mind_id=… (or set SYNAPSE_MIND_ID).", code="mind_id_required"
            )
        return path.replace(MIND, quote(self.mind_id, safe=""))


def query(params: Params) -> list[tuple[str, str | int | float | bool | None]]:
    """Query pairs without the Nones; a list repeats its name; booleans as true/false."""
    pairs: list[tuple[str, str | int | float | bool | None]] = []
    for name, value in params.items():
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        for one in values:
            pairs.append((name, ("true" if one else "false") if isinstance(one, bool) else str(one)))
    return pairs


def build(
    client: httpx.Client | httpx.AsyncClient, credentials: Credentials, call: Call[Any]
) -> httpx.Request:
    headers = credentials.headers() | dict(call.headers)
    return client.build_request(
        call.method,
        credentials.path(call.path),
        params=query(call.params),
        json=call.body if call.content is None else None,
        content=call.content,
        headers=headers,
    )


def finish[T](call: Call[T], response: httpx.Response) -> T:
    """The answer's value, or the `SynapseError` subclass its status calls for."""
    if response.is_success:
        return call.parse(response)
    raise error_from(response)


def error_from(response: httpx.Response) -> SynapseError:
    status = response.status_code
    code, message, details, request_id = "", "", [], None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        envelope = body.get("error")
        if isinstance(envelope, dict):
            code = str(envelope.get("code", ""))
            message = str(envelope.get("message", ""))
            details = [d for d in envelope.get("details") or [] if isinstance(d, dict)]
        request_id = body.get("request_id")
    if not message:
        message = f"HTTP {status} {response.reason_phrase}".strip()
    return error_class(status)(
        message,
        status=status,
        code=code,
        details=details,
        request_id=str(request_id) if request_id else None,
        retry_after=retry_after(response),
    )


def escape(segment: str) -> str:
    """A path segment (an id a caller passed) made safe for the URL."""
    return quote(segment, safe="")


# ---------------------------------------------------------------- answer readers


def model[M: BaseModel](kind: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: kind.model_validate(response.json())


def page[M: BaseModel](kind: type[M], name: str) -> Callable[[httpx.Response], Page[M]]:
    def read(response: httpx.Response) -> Page[M]:
        body = response.json()
        return Page([kind.model_validate(item) for item in body[name]], body.get("next_cursor"))

    return read


def nothing(response: httpx.Response) -> None:
    return None


def text(response: httpx.Response) -> str:
    return response.text
