"""An in-process stand-in for API Gateway (HTTP API, payload 2.0) over the routes of template.yaml.

It matches a route as API Gateway does (literal segments before {params}), builds the same event,
runs the authorizer first and hands its context to the handler. The local runner serves it over
HTTP; the integration tests call it directly.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from infra import template

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


@cache
def load_handler(code_dir: Path, handler: str) -> LambdaHandler:
    """Import `code_dir/<module>.py` under a unique name (every function's file is app.py)."""
    module_name, attribute = handler.rsplit(".", 1)
    unique = f"synapse_function_{code_dir.name}_{module_name}"
    spec = importlib.util.spec_from_file_location(unique, code_dir / f"{module_name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    function: LambdaHandler = getattr(module, attribute)
    return function


@dataclass
class LambdaContext:
    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:000000000000:function:local"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def build_event(
    route: template.Route,
    method: str,
    path: str,
    raw_query: str,
    headers: dict[str, str],
    body: bytes,
    path_params: dict[str, str],
) -> dict[str, Any]:
    now = time.time()
    request_id = str(uuid.uuid4())
    lowered = {k.lower(): v for k, v in headers.items()}
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    return {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": lowered,
        "queryStringParameters": query or None,
        "pathParameters": path_params or None,
        "body": text if body else None,
        "isBase64Encoded": encoded,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route.route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
    }


ERROR_CODES = {
    400: "bad_request",
    403: "forbidden",
    404: "not_found",
    413: "payload_too_large",
    414: "uri_too_long",
    421: "misdirected_request",
    431: "headers_too_large",
}


def error_response(status: int, message: str, request_id: str | None = None) -> HttpResponse:
    """An error the gateway (or the HTTP front) answers itself, in the error body of docs/rules.md §3."""
    payload = {
        "error": {"code": ERROR_CODES.get(status, "internal_error"), "message": message, "details": []},
        "request_id": request_id or str(uuid.uuid4()),
    }
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return HttpResponse(status, {"Content-Type": "application/json; charset=utf-8"}, body)


class Gateway:
    def __init__(self) -> None:
        self.routes = template.routes()
        self.default_route = template.default_route()
        self.authorizer = load_handler(*template.authorizer_function())

    def match(self, method: str, path: str) -> tuple[template.Route, dict[str, str]] | None:
        for route in self.routes:
            found = route.pattern.match(path)
            if found and route.method == method:
                return route, found.groupdict()
        return None

    def handle(
        self,
        method: str,
        path: str,
        raw_query: str = "",
        headers: dict[str, str] | None = None,
        body: bytes = b"",
    ) -> HttpResponse:
        matched = self.match(method.upper(), path)
        if matched is None and self.default_route is None:
            return error_response(404, f"No route {method.upper()} {path[:200]}.")
        route, path_params = matched or (self.default_route, {})
        assert route is not None
        event = build_event(route, method.upper(), path, raw_query, headers or {}, body, path_params)
        request_id = event["requestContext"]["requestId"]
        if route.authorized:
            verdict = self.authorizer(event, LambdaContext("authorizer"))
            if not verdict.get("isAuthorized"):
                return error_response(403, "Forbidden.", request_id)
            event["requestContext"]["authorizer"] = {"lambda": verdict.get("context", {})}
        handler = load_handler(route.code_dir, route.handler)
        try:
            result = handler(event, LambdaContext(route.function))
        except Exception:
            return error_response(500, "Something went wrong on our side.", request_id)
        raw = result.get("body") or ""
        payload = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode("utf-8")
        return HttpResponse(int(result["statusCode"]), dict(result.get("headers") or {}), payload)
