"""The parts the OpenAPI document (`synapse.openapi.document`) is built from: an operation's description
(`Op`, `Param`), the parameters routes share, the security schemes, and how an `Op` becomes an
OpenAPI operation object, with every status it can answer and the error envelope for each error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, RootModel
from pydantic.json_schema import models_json_schema

from synapse.api import routes
from synapse.core import validation
from synapse.core.validation import Body
from synapse.memory.model import MemoryWrite
from synapse.openapi import schemas
from synapse.storage import cursor

Auth = Literal["user", "either", "public", "signed"]
TEXT = "text/plain"  # an answer that is text, not JSON (recall)
JSON_TYPE = "application/json"
JSON = "json"  # an answer that is some JSON object (no model describes it)
REF = "#/components/schemas/"


@dataclass(frozen=True)
class Param:
    name: str
    where: Literal["query", "header"]
    schema: dict[str, Any]
    description: str = ""
    required: bool = False

    def spec(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "in": self.where, "schema": self.schema}
        if self.description:
            found["description"] = self.description
        if self.required:
            found["required"] = True
        return found


@dataclass(frozen=True)
class Op:
    """One operation: `ok` maps each success status to its answer (a model, TEXT, a list of both,
    or None for no body); `errors` adds statuses to those its credential, parameters and body imply."""

    id: str
    summary: str
    tag: str
    auth: Auth
    ok: dict[int, Any]
    body: type[Body] | type[BaseModel] | None = None  # a pydantic model only describes (MemoryBatch)
    params: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()
    # The model of its error answers but those in `enveloped` (the Error envelope): MCP's are JSON-RPC
    # error objects, OAuth's RFC 6749 §5.2 bodies. None: the Error envelope.
    error_answer: type[BaseModel] | None = None
    # The statuses answered with the Error envelope whatever `error_answer` says: the credential's
    # 401; for OAuth, the 413 and 429 answered before its own handling starts.
    enveloped: tuple[int, ...] = (401,)
    media: str = "application/json"  # the request body's content type
    # What a bad body is answered: OAuth's is a 400 for a body of another type or a bad field too.
    body_errors: tuple[int, ...] = (413, 415, 422)
    notes: dict[int, str] = field(default_factory=dict)  # a status's description, if not DESCRIPTIONS'


def query(name: str, schema: dict[str, Any], description: str = "", required: bool = False) -> Param:
    return Param(name, "query", schema, description, required)


def enum(values: type[Any]) -> dict[str, Any]:
    return {"type": "string", "enum": [v.value for v in values]}


def integer(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high}


MIND_PATHS = ("/memory", "/proposals")  # routes that work in one mind (X-Mind-Id or the Mind Key's)
STRING = {"type": "string"}
TEXT_PRESENT = {"type": "string", "minLength": 1, "pattern": r"\S"}  # not blank once trimmed
BOOLEAN = {"type": "boolean"}
PAGE = (
    query("limit", integer(1, 100), "Page size (default 20)."),
    query(
        "cursor",
        {"type": "string", "pattern": cursor.TOKEN_PATTERN},
        "The previous page's next_cursor, as it came (any other is a 400).",
    ),
)
MIND = (
    Param("X-Mind-Id", "header", STRING, "Which of your minds (JWT only; a Mind Key addresses its own)."),
    query("mind_id", STRING, "Same as X-Mind-Id."),
)
SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "user": [{"jwt": []}],
    "either": [{"jwt": []}, {"mindKey": []}, {"mindKeyHeader": []}],
    "public": [],
    "signed": [],
}
SECURITY_SCHEMES = {
    "jwt": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A person: Authorization: Bearer <jwt>.",
    },
    "mindKey": {"type": "http", "scheme": "bearer", "description": "An agent: Authorization: Bearer mk_…"},
    "mindKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Mind-Key",
        "description": "An agent: X-Mind-Key: mk_…",
    },
}
DESCRIPTIONS = {
    200: "OK",
    302: "Found: the browser goes to Location",
    304: "Not Modified: If-None-Match names the current ETag",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad request (a parameter, the JSON, a cursor)",
    401: "Missing, malformed, expired or revoked credential",
    403: "The credential may not do this, or your role on the mind is too low (details name the role)",
    404: "No such thing in this mind",
    405: "Method not allowed (POST /mcp only: the MCP server is stateless)",
    406: "Accept names neither application/json nor text/event-stream",
    409: "Conflict: busy items, a limit reached, or a reused Idempotency-Key",
    410: "Gone: the invitation has expired",
    412: "If-Match names a stale version",
    413: "Body too large",
    414: "The URI is too long (over 8,192 characters)",
    415: "Body not JSON",
    422: "A field breaks a rule",
    429: "Rate limited; see Retry-After",
    431: "The request line and headers are too large (over 10 KiB on API Gateway)",
}


def _path_params(path: str) -> list[dict[str, Any]]:
    names = re.findall(r"\{([\w+]+)\}", path)
    return [{"name": n, "in": "path", "required": True, "schema": STRING} for n in names]


def _addresses_mind(path: str, op: Op) -> bool:
    """Whether the route works in a mind named by X-Mind-Id (a person) or its Mind Key (an agent)."""
    return op.auth == "either" or path.startswith(MIND_PATHS)


def _error_statuses(method: str, path: str, op: Op) -> set[int]:
    """The errors an operation can answer: from its credential, what it reads, and `op.errors`."""
    found = set(op.errors)
    addresses_mind = _addresses_mind(path, op)
    if op.auth in ("user", "either", "signed"):
        found |= {401, 429}
    if op.auth in ("user", "either"):
        found.add(403)
    if ("{" in path and op.auth != "signed") or addresses_mind:  # an unknown hook is a 401, no oracle
        found.add(404)
    refuses_unknown = f"{method} {path}" not in routes.IGNORES_UNKNOWN_QUERY  # a parameter it does not take
    if refuses_unknown or any(p.where == "query" for p in op.params) or op.body or addresses_mind:
        found.add(400)
    if op.body is not None:
        found |= set(op.body_errors)
    if method in ("POST", "PUT", "PATCH", "DELETE") and op.auth != "public":
        found.add(409)  # other writers kept the items busy through every retry
    return found


def _content(answer: Any, refs: dict[Any, str]) -> dict[str, Any]:
    kinds = answer if isinstance(answer, list) else [answer]
    content: dict[str, Any] = {}
    for kind in kinds:
        if kind == JSON:
            content[JSON_TYPE] = {"schema": {"type": "object"}}
        elif isinstance(kind, str):
            content[kind] = {"schema": STRING}
        else:
            content[JSON_TYPE] = {"schema": {"$ref": refs[kind]}}
    return content


def _header(description: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"description": description, "schema": schema, "required": required}


_RETRY_AFTER = "Seconds to wait before sending the request again"
_SECONDS = {"type": "integer"}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": _header("The scheme to authenticate with.", STRING, required=True)},
    409: {"Retry-After": _header(_RETRY_AFTER + " (when other writers kept the items busy).", _SECONDS)},
    429: {"Retry-After": _header(_RETRY_AFTER + ".", _SECONDS, required=True)},
}
# The creations that answer where the new resource lives, and the bodies applied at most once per key.
LOCATED = {("POST", "/minds"), ("POST", "/memory"), ("POST", "/minds/{mind_id}/webhooks")}
REPLAYABLE = {("POST", "/memory/batch"), ("POST", "/hooks/{hook_id}")}
# The OAuth answers that carry a secret or a one-time step, never to be cached (RFC 6749 §5.1).
NO_STORE = {("POST", "/oauth/register"), ("GET", "/oauth/authorize"), ("POST", "/oauth/token")}
NO_STORE |= {("POST", "/oauth/revoke")}
LOCATION = {"Location": _header("The new resource's path.", STRING, required=True)}
REDIRECT = {
    "Location": _header(
        "The consent page (<base>/console#/connect/oar_…), or the client's redirect_uri with"
        " error, error_description and state.",
        STRING,
        required=True,
    )
}
REPLAYED = {
    "Idempotent-Replayed": _header("`true` on the stored answer to a replayed Idempotency-Key.", STRING)
}
UNCACHED = {
    "Cache-Control": _header("no-store", {"type": "string", "const": "no-store"}, required=True),
    "Pragma": _header("no-cache", {"type": "string", "const": "no-cache"}, required=True),
}


def _success_headers(method: str, path: str, status: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if status == 201 and (method, path) in LOCATED:
        found |= LOCATION
    if status == 302:
        found |= REDIRECT
    if status == 200 and (method, path) in REPLAYABLE:
        found |= REPLAYED
    if (method, path) in NO_STORE:
        found |= UNCACHED
    return found


def _responses(method: str, path: str, op: Op, refs: dict[Any, str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for status, answer in sorted(op.ok.items()):
        found[str(status)] = {"description": op.notes.get(status, DESCRIPTIONS[status])}
        if answer is not None:
            found[str(status)]["content"] = _content(answer, refs)
        if headers := _success_headers(method, path, status):
            found[str(status)]["headers"] = headers
    for status in sorted(_error_statuses(method, path, op)):
        model = (
            op.error_answer if op.error_answer is not None and status not in op.enveloped else schemas.Error
        )
        error = {JSON_TYPE: {"schema": {"$ref": refs[model]}}}
        found[str(status)] = {"description": op.notes.get(status, DESCRIPTIONS[status]), "content": error}
        # A 401 of OAuth's own (invalid_client) is no credential's challenge: no WWW-Authenticate
        if status in ERROR_HEADERS and (status != 401 or model is schemas.Error):
            found[str(status)]["headers"] = ERROR_HEADERS[status]
    return found


def _required(body: type[Body] | type[BaseModel]) -> bool:
    if issubclass(body, Body):
        return bool(body.nothing_given) or any(field.required for field in body.declared.values())
    if issubclass(body, RootModel):  # one of some models: each has its required fields
        return True
    return any(field.is_required() for field in body.model_fields.values())


def operation(method: str, path: str, op: Op, refs: dict[Any, str]) -> dict[str, Any]:
    found: dict[str, Any] = {"operationId": op.id, "summary": op.summary, "tags": [op.tag]}
    params = op.params + (MIND if _addresses_mind(path, op) else ())
    found["parameters"] = _path_params(path) + [p.spec() for p in params]
    if op.body is not None:
        schema: dict[str, Any] = {"$ref": refs[op.body]}
        if op.auth == "signed":  # a hook takes one memory or a batch
            schema = {"oneOf": [{"$ref": refs[MemoryWrite]}, schema]}
        found["requestBody"] = {
            "required": _required(op.body),
            "content": {op.media: {"schema": schema}},
        }
    found["responses"] = _responses(method, path, op, refs)
    found["security"] = SECURITY[op.auth]
    return found


def models(operations: list[Op]) -> tuple[dict[Any, str], dict[str, Any]]:
    """Every body's and answer's $ref and the components' schemas: request bodies as their rules
    accept them (`core.validation`), answers as sent (pydantic, `schemas`)."""
    answers = {
        kind
        for op in operations
        for answer in op.ok.values()
        for kind in (answer if isinstance(answer, list) else [answer])
    }
    answers = {kind for kind in answers if isinstance(kind, type)} | {schemas.Error}
    answers |= {op.error_answer for op in operations if op.error_answer is not None}
    described = {op.body for op in operations if op.body is not None and issubclass(op.body, BaseModel)}
    outputs = [(kind, "serialization") for kind in sorted(answers, key=lambda m: m.__name__)]
    inputs = [(kind, "validation") for kind in sorted(described, key=lambda m: m.__name__)]
    keyed, top = models_json_schema(inputs + outputs, ref_template=REF + "{model}")  # type: ignore[arg-type]
    refs: dict[Any, str] = {kind: keyed[(kind, mode)]["$ref"] for kind, mode in inputs + outputs}
    components = top.get("$defs", {})
    enums: set[type[StrEnum]] = set()

    def enum_ref(kind: type[StrEnum]) -> str:
        enums.add(kind)
        return REF + kind.__name__

    bodies = {op.body for op in operations if op.body is not None and issubclass(op.body, Body)}
    for body in sorted(bodies | {MemoryWrite}, key=lambda b: b.__name__):
        refs[body], components[body.__name__] = REF + body.__name__, validation.json_schema(body, enum_ref)
    for kind in enums:
        components[kind.__name__] = {"type": "string", "enum": [str(member) for member in kind]}
    return refs, dict(sorted(components.items()))
