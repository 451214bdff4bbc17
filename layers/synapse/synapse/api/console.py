"""The review console's static files (functions/console/static/) and its sign-in configuration.

GET /console answers index.html; GET /console/{proxy+} answers a file of that folder (text files of
the types in CONTENT_TYPES only; anything else, or a path leaving the folder, is SPEC's 404), plus
two answers built here:

- `config.json`: how the page signs a person in, from the settings: the auth mode, and in Cognito
  mode the hosted UI's origin (`SYNAPSE_CONSOLE_COGNITO_DOMAIN`) and the app client id
  (`SYNAPSE_JWT_CLIENT_ID`) for the authorization-code flow with PKCE.
- `dev-token.json`: the local runner's dev JWT, only when the runner put it in
  `SYNAPSE_CONSOLE_DEV_TOKEN` AND dev secrets are allowed (`SYNAPSE_ALLOW_DEV_SECRETS`, which only
  `make run` sets); on AWS neither is set, so nothing here can issue a token there.

Every answer carries a strict Content-Security-Policy (no inline script or style, no third-party
origin but the Cognito domain the page posts the code to), `X-Content-Type-Options: nosniff` and
no framing: the errors too (`endpoint`), whether the console function answers them (a 404 for a
file that is not there, a 500) or the `$default` function (a 405 for another method). Files add
an ETag with `Cache-Control: no-cache` (they have no hashed names, so a browser revalidates and
gets a 304 while nothing changed); config.json is `no-store`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from synapse.api.http import Request, Response, public_endpoint
from synapse.core.errors import NotFound
from synapse.core.observability import LambdaHandler
from synapse.core.settings import get_settings

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
INDEX = "index.html"
CONFIG = "config.json"
DEV_SIGNIN_FILE = "dev-token.json"
# What the folder's files are named; nothing else is looked up on disk (no NUL, no 4 KB paths).
_FILE_NAME = re.compile(r"[A-Za-z0-9_.\-/]{1,200}")


def cognito_domain() -> str:
    """The hosted UI's origin (https://…), or "" when this stack has none."""
    domain = get_settings().console_cognito_domain.rstrip("/")
    return domain if domain.startswith("https://") and "/" not in domain[8:] else ""


def content_security_policy() -> str:
    connect = " ".join(filter(None, ["'self'", cognito_domain()]))
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )


def security_headers() -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
    }


def serves(path: str) -> bool:
    """Whether a request path is the console's (`/console` or below it), not the API's."""
    return path == "/console" or path.startswith("/console/")


def secured(answer: dict[str, Any]) -> dict[str, Any]:
    """A Lambda answer with the console's security headers (any header it sets itself stays)."""
    return {**answer, "headers": {**security_headers(), **(answer.get("headers") or {})}}


def endpoint(function: Callable[[Request], Response]) -> LambdaHandler:
    """`http.public_endpoint` whose answer to a path under /console carries the security headers,
    whatever its status: every answer of the console function, and the `$default` function's 405
    for another method there. Other paths' answers are left as they are."""
    answer = public_endpoint(function)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        found = answer(event, context)
        return secured(found) if serves(str(event.get("rawPath") or "")) else found

    return handler


def dev_token() -> str:
    """The local runner's dev JWT, or "" anywhere else."""
    settings = get_settings()
    return settings.console_dev_token if settings.allow_dev_secrets else ""


def config() -> dict[str, Any]:
    settings = get_settings()
    domain, client_id = cognito_domain(), settings.jwt_client_id or ""
    return {
        "auth_mode": settings.auth_mode,
        # The template sets the domain in cognito mode only; offered whenever domain and client are known.
        "cognito": {"domain": domain, "client_id": client_id} if domain and client_id else None,
        "dev_signin": bool(dev_token()),
    }


@cache
def _read(path: Path, modified_ns: int) -> tuple[str, str]:
    """The file's text and ETag, read once per version of the file (`make run` serves edits at once)."""
    text = path.read_text(encoding="utf-8")
    return text, '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32] + '"'


def static_file(folder: Path, name: str) -> Path:
    """The file `name` names inside `folder`; NotFound for anything else (.., hidden, other types)."""
    root = folder.resolve()
    parts = name.split("/")
    if not _FILE_NAME.fullmatch(name) or any(p in {"", ".", ".."} or p.startswith(".") for p in parts):
        raise NotFound(f"No console file {name[:80]!r}.")
    path = (root / name).resolve()
    if not path.is_relative_to(root) or path.suffix not in CONTENT_TYPES or not path.is_file():
        raise NotFound(f"No console file {name[:80]!r}.")
    return path


def _answer(request: Request, text: str, etag: str, content_type: str) -> Response:
    headers = {"Cache-Control": "no-cache", "ETag": etag}
    if request.headers.get("if-none-match") == etag:
        return Response(304, "", headers)
    return Response(200, text, {"Content-Type": content_type, **headers})


def _json(payload: dict[str, Any]) -> Response:
    answer = Response.json(payload)
    return Response(200, answer.body, {**answer.headers, "Cache-Control": "no-store"})


def serve(request: Request, folder: Path) -> Response:
    """The answer to GET /console (no proxy parameter) or GET /console/{proxy+}; `endpoint` adds
    the security headers to it, or to the error it raises."""
    name = request.path("proxy") or INDEX
    if name == CONFIG:
        return _json(config())
    if name == DEV_SIGNIN_FILE:
        token = dev_token()
        if not token:
            raise NotFound("Dev sign-in exists only on the local runner (make run).")
        return _json({"token": token})
    path = static_file(folder, name)
    text, etag = _read(path, path.stat().st_mtime_ns)
    return _answer(request, text, etag, CONTENT_TYPES[path.suffix])
