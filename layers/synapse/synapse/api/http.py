"""HTTP glue for API Gateway HTTP API (payload 2.0): parse a request, render a response, and map
every domain error to SPEC's JSON error body in one place.
"""

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol
from urllib.parse import parse_qs

from botocore.exceptions import ClientError

from synapse.api import routes
from synapse.auth.principal import Principal
from synapse.core import json_input
from synapse.core.errors import (
    BadRequest,
    Contention,
    NotFound,
    PayloadTooLarge,
    SynapseError,
    Throttled,
    UnsupportedMediaType,
)
from synapse.core.observability import COUNT, LambdaHandler, entry_point, logger, metrics
from synapse.core.settings import get_limits
from synapse.storage import pages, ratelimit
from synapse.teams import directory, roles

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = json_input.MAX_DEPTH
_WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() admits '²', int() does not
# A memory's version as an ETag: 3, "3" or W/"3" (the OpenAPI document's If-Match pattern).
IF_MATCH = re.compile(r'(?:W/)?(?:([0-9]{1,9})|"([0-9]{1,9})")')
JSON_TYPE = "application/json; charset=utf-8"


class Response(NamedTuple):
    """A NamedTuple, as Request: a dataclass compiles its methods at import (issue 14, cold start)."""

    status: int
    body: str
    headers: dict[str, str]  # no default: one dict shared by every Response could be changed by one

    @classmethod
    def json(cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> "Response":
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        if not json_input.is_text(text):  # the last guard: an answer is sent as UTF-8, never a 500
            text = json.dumps(json_input.repaired(payload), ensure_ascii=False, separators=(",", ":"))
        return cls(status, text, {"Content-Type": JSON_TYPE, **(headers or {})})

    @classmethod
    def text(cls, payload: str, status: int = 200) -> "Response":
        shown = payload if json_input.is_text(payload) else json_input.repaired_text(payload)
        return cls(status, shown, {"Content-Type": "text/plain; charset=utf-8"})

    @classmethod
    def empty(cls, status: int = 204) -> "Response":
        return cls(status, "", {})

    def to_lambda(self) -> dict[str, Any]:
        return {
            "statusCode": self.status,
            "headers": self.headers,
            "body": self.body,
            "isBase64Encoded": False,
        }


def parse_json(data: bytes) -> Any:
    """A body as JSON the way every door reads it (`core.json_input.read`: UTF-8, no NaN or Infinity
    nor an infinite number, at most MAX_JSON_DEPTH levels, no lone surrogate in any string or key);
    else json_input.Unreadable saying why and where (callers put it in their own words)."""
    return json_input.read(data)


def refusal(error: json_input.Unreadable) -> BadRequest:
    """The 400 for a body `json_input` cannot read, naming the field for a rule about one."""
    if not error.field and error.rule != json_input.SURROGATE_RULE:
        return BadRequest(f"The body {error.message}.")
    field = error.field or "(the document)"
    return BadRequest(
        f"The body: {field} {error.message}.",
        details=[{"field": field, "rule": error.rule, "message": error.message}],
    )


class BodyModel[T](Protocol):
    """A request body's type (`core.validation.Body`): validates a parsed JSON object or raises a 422.
    Duck-typed so that the handlers without a body do not load the validation rules."""

    def from_body(self, body: dict[str, Any], /) -> T: ...


class Addressed(NamedTuple):
    """The mind a request addresses, and the person's role on it (None: an agent's credential)."""

    mind_id: str
    role: str | None

    @property
    def vouches(self) -> bool | None:
        """Whether the caller's writes are verified by them: None for an agent (its source says),
        False for an editor (reviewed as an agent's), True for a reviewer or an owner."""
        return None if self.role is None else roles.vouches(self.role)


class Request(NamedTuple):
    event: dict[str, Any]
    headers: dict[str, str]
    query: dict[str, list[str]]
    path_params: dict[str, str]
    request_id: str

    @classmethod
    def from_event(cls, event: dict[str, Any], request_id: str) -> "Request":
        headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
        query = parse_qs(event.get("rawQueryString") or "", keep_blank_values=True)
        if not query and event.get("queryStringParameters"):
            query = {k: v.split(",") for k, v in event["queryStringParameters"].items()}
        return cls(event, headers, query, dict(event.get("pathParameters") or {}), request_id)

    # ------------------------------------------------------------ identity

    @property
    def principal(self) -> Principal:
        context = (self.event.get("requestContext") or {}).get("authorizer") or {}
        return Principal.from_context(context.get("lambda"))

    def mind_id(self) -> str:
        """The mind a memory request addresses (`addressed`)."""
        return self.addressed().mind_id

    def addressed(self) -> Addressed:
        """The mind a memory request addresses and the caller's role on it (None for an agent): a
        mind the person is not a member of is a 404, too low a role for the route a 403
        (`routes.ROUTE_ROLES`). Each call counts one request against the mind's rate
        (SYNAPSE_MIND_RATE_LIMIT, per minute)."""
        found = self._addressed_mind()
        ratelimit.admit(f"mind:{found.mind_id}", get_limits().mind_rate_limit, "This mind")
        return found

    def _addressed_mind(self) -> Addressed:
        principal = self.principal
        requested = self.headers.get("x-mind-id") or self.query_one("mind_id")
        if not principal.is_user:
            if requested and requested != principal.mind_id:
                raise NotFound(f"No mind {requested[:80]!r}.")
            assert principal.mind_id is not None
            return Addressed(principal.mind_id, None)
        user = principal.require_user("address a mind")
        needed = routes.required_role(self.event.get("routeKey")) or roles.VIEWER
        if requested:
            return Addressed(requested, roles.require(requested, user, needed))
        try:
            only = directory.only_mind(user)
        except directory.TooMany:
            raise BadRequest(
                "You are a member of several minds: name one with the X-Mind-Id header or the mind_id "
                "parameter."
            ) from None
        if only is None:
            raise NotFound("You have no mind yet: create one with POST /minds.")
        return Addressed(only, roles.require(only, user, needed))

    def mind_role(self) -> str | None:
        """For a route with `{mind_id}` in its path: the person's role there, checked against the
        route's rule (404 not a member, 403 too low); None for an agent or a route without a rule."""
        principal = self.principal
        needed = routes.required_role(self.event.get("routeKey"))
        if needed is None or not principal.is_user or "mind_id" not in self.path_params:
            return None
        return roles.require(self.path("mind_id"), principal.require_user("address a mind"), needed)

    # ------------------------------------------------------------ input

    def path(self, name: str) -> str:
        return self.path_params.get(name, "")

    def query_one(self, name: str) -> str | None:
        values = self.query.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise BadRequest(
                f"{name}: give this parameter once.", details=[{"field": name, "rule": "single"}]
            )
        return values[0]

    def page(self) -> tuple[int, str | None]:
        """`limit` (1-100, default 20) and `cursor`: how every cursor-paged list is asked for."""
        return self.query_int("limit", pages.DEFAULT_LIMIT, 1, pages.MAX_LIMIT), self.query_one("cursor")

    def query_all(self, name: str) -> list[str]:
        return self.query.get(name, [])

    def query_int(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.query_one(name)
        if raw is None:
            return default
        if not _WHOLE_NUMBER.fullmatch(raw.strip()) or not low <= int(raw) <= high:
            raise BadRequest(
                f"{name}: must be a whole number from {low} to {high}.",
                details=[{"field": name, "rule": "range", "message": f"{low}-{high}"}],
            )
        return int(raw)

    def query_bool(self, name: str, default: bool | None = None) -> bool | None:
        raw = self.query_one(name)
        if raw is None:
            return default
        if raw.lower() not in {"true", "false"}:
            raise BadRequest(f"{name}: must be true or false.", details=[{"field": name, "rule": "boolean"}])
        return raw.lower() == "true"

    def query_choice(self, name: str, choices: type[Any]) -> str | None:
        raw = self.query_one(name)
        allowed = [c.value for c in choices]
        if raw is not None and raw not in allowed:
            raise BadRequest(
                f"{name}: must be one of {', '.join(allowed)}.", details=[{"field": name, "rule": "enum"}]
            )
        return raw

    def raw_body(self, max_bytes: int = MAX_BODY_BYTES) -> bytes:
        """The body's bytes as sent (API Gateway base64-encodes binary ones); 413 past `max_bytes`."""
        raw = self.event.get("body") or ""
        try:
            data = base64.b64decode(raw, validate=True) if self.event.get("isBase64Encoded") else raw.encode()
        except (binascii.Error, ValueError):
            raise BadRequest("The body is neither text nor valid base64.") from None
        if len(data) > max_bytes:
            raise PayloadTooLarge(f"The body is {len(data)} bytes; the limit is {max_bytes}.")
        return data

    def json_object(self, max_bytes: int = MAX_BODY_BYTES) -> dict[str, Any]:
        data = self.raw_body(max_bytes)
        content_type = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type and content_type != "application/json" and not content_type.endswith("+json"):
            raise UnsupportedMediaType(
                f"Send JSON with Content-Type: application/json, not {content_type!r}."
            )
        if not data.strip():
            return {}
        try:
            parsed = parse_json(data)
        except json_input.Unreadable as error:
            raise refusal(error) from None
        if not isinstance(parsed, dict):
            raise BadRequest("The body must be a JSON object.")
        return parsed

    def body[T](self, model: BodyModel[T]) -> T:
        return model.from_body(self.json_object())

    def if_match(self) -> int | None:
        raw = self.headers.get("if-match")
        if raw is None:
            return None
        found = IF_MATCH.fullmatch(raw.strip())
        if not found:
            raise BadRequest("If-Match: must be the memory's version number, e.g. If-Match: 3.")
        return int(found[1] or found[2])


def error_response(error: SynapseError, request_id: str) -> Response:
    payload = {
        "error": {"code": error.code, "message": error.message, "details": error.details},
        "request_id": request_id,
    }
    return Response.json(payload, status=error.status, headers=error.headers)


# DynamoDB's answers when it sheds load or a transaction holds the item (botocore has already resent
# the request a few times): the client may send it again, so 429 / 409 with Retry-After, not a 500.
THROTTLING_CODES = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
CONFLICT_CODES = frozenset({"TransactionConflictException", "TransactionInProgressException"})


def _database_error(error: ClientError) -> SynapseError:
    code = error.response.get("Error", {}).get("Code", "")
    if code in THROTTLING_CODES:
        return Throttled("The database is busy right now; retry shortly.", retry_after=1)
    if code in CONFLICT_CODES:
        return Contention("Another request is changing the same data; retry shortly.")
    logger.exception("Unhandled error")
    return SynapseError("Something went wrong on our side.")


def _wrap(
    function: Callable[[Request], Response], authenticated: bool, checks_query: bool = True
) -> LambdaHandler:
    @entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        request_id = str(
            (event.get("requestContext") or {}).get("requestId")
            or getattr(context, "aws_request_id", "local")
        )
        logger.append_keys(request_id=request_id)
        try:
            request = Request.from_event(event, request_id)
            if authenticated:  # a missing or bad credential is a 401 before anything else, then scope
                request.principal.require_scope(routes.required_scope(event.get("routeKey")))
                request.mind_role()  # and the role on the mind in the path (a 404 for a non-member)
            if checks_query:  # a parameter the route does not take: 400
                routes.check_query(event.get("routeKey"), request.query)
            response = function(request)
        except SynapseError as error:
            response = error_response(error, request_id)
        except ClientError as error:
            response = error_response(_database_error(error), request_id)
        except Exception:
            logger.exception("Unhandled error")
            response = error_response(SynapseError("Something went wrong on our side."), request_id)
        metrics.add_metric(name=f"Http{response.status // 100}xx", unit=COUNT, value=1)
        logger.info("Handled", extra={"status": response.status, "route": event.get("routeKey")})
        return response.to_lambda()

    return handler


def endpoint(function: Callable[[Request], Response]) -> LambdaHandler:
    """Wrap a handler: the caller's credential first (401), then logging with request id, tracing,
    metrics, and domain errors → HTTP. Every route behind the authorizer uses this."""
    return _wrap(function, authenticated=True)


def public_endpoint(function: Callable[[Request], Response]) -> LambdaHandler:
    """`endpoint` for a route without the authorizer, which authenticates the request itself
    (signed hook deliveries)."""
    return _wrap(function, authenticated=False)


def transport_endpoint(function: Callable[[Request], Response]) -> LambdaHandler:
    """`public_endpoint` for /mcp, whose handler checks the credential and the query parameters
    itself (`routes.check_query`), to answer both in its transport's terms (JSON-RPC)."""
    return _wrap(function, authenticated=False, checks_query=False)
