"""The memory: its fields, the rules on what clients send, and how one write merges into another.

Validation is pydantic in strict mode over already-parsed JSON; every failure becomes a 422
whose details name the field and the rule (see `validation_details`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from synapse.core import clock
from synapse.core.errors import Unprocessable
from synapse.memory.changes import DEFAULT_CONFIDENCE as DEFAULT_CONFIDENCE
from synapse.memory.changes import new_memory as new_memory
from synapse.memory.changes import patched as patched
from synapse.memory.changes import replaced as replaced
from synapse.memory.changes import verified as verified
from synapse.memory.kinds import CONTENT_MAX_BYTES as CONTENT_MAX_BYTES
from synapse.memory.kinds import KEY_MAX_CHARS as KEY_MAX_CHARS
from synapse.memory.kinds import KEY_PATTERN as KEY_PATTERN
from synapse.memory.kinds import LABEL_MAX_CHARS as LABEL_MAX_CHARS
from synapse.memory.kinds import NAME_MAX_CHARS as NAME_MAX_CHARS
from synapse.memory.kinds import TAG_MAX_CHARS as TAG_MAX_CHARS
from synapse.memory.kinds import TAGS_MAX as TAGS_MAX
from synapse.memory.kinds import Category as Category
from synapse.memory.kinds import Memory as Memory
from synapse.memory.kinds import Priority as Priority
from synapse.memory.kinds import Source as Source

# ---------------------------------------------------------------- field rules


def _check_key(value: str) -> str:
    if not 1 <= len(value) <= KEY_MAX_CHARS:
        raise PydanticCustomError("length", f"must be 1-{KEY_MAX_CHARS} characters")
    if not KEY_PATTERN.fullmatch(value):  # fullmatch: `$` alone would let a trailing newline in
        raise PydanticCustomError(
            "pattern", "must be lowercase snake_case: a-z, 0-9 and single underscores between words"
        )
    return value


def _check_content(value: str) -> str:
    size = len(value.encode("utf-8"))
    if size == 0:
        raise PydanticCustomError("length", "must not be empty")
    if size > CONTENT_MAX_BYTES:
        raise PydanticCustomError("size", f"must be at most {CONTENT_MAX_BYTES} bytes of UTF-8 (got {size})")
    return value


def normalize_tags(values: list[str]) -> list[str]:
    """Trim, lowercase, de-duplicate keeping first order; then enforce the limits."""
    seen: dict[str, None] = {}
    for raw in values:
        tag = raw.strip().lower()
        if not 1 <= len(tag) <= TAG_MAX_CHARS:
            raise PydanticCustomError(
                "length", f"each tag must be 1-{TAG_MAX_CHARS} characters after trimming"
            )
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in tag):
            raise PydanticCustomError("characters", "tags must not contain control characters")
        seen.setdefault(tag, None)
    if len(seen) > TAGS_MAX:
        raise PydanticCustomError("max_items", f"at most {TAGS_MAX} distinct tags")
    return list(seen)


def _check_expires_at(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError(
            "format", "must be an ISO 8601 timestamp, e.g. 2026-12-31T23:59:00Z"
        ) from None
    if moment.tzinfo is None:
        raise PydanticCustomError("timezone", "must carry a time zone (Z or an offset such as +02:00)")
    try:
        return clock.to_iso(moment)
    except (OverflowError, ValueError):  # e.g. 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise PydanticCustomError("range", "must fall between the years 1 and 9999 in UTC") from None


Confidence = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class Body(BaseModel):
    """A request body: strict, no unknown fields. `api.http.Request.body` calls `from_body`, so the
    HTTP glue (which every handler imports) needs no pydantic (issue 14, cold start)."""

    # defer_build: a model's validator is built on its first use, not at import: a handler imports
    # every body model and validates one or two (issue 14, cold start)
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Self:
        """The validated body, or a 422 naming every field that broke a rule (`parse`)."""
        return parse(cls, body)


class MemoryWrite(Body):
    """The body of `POST /memory`: every client field of SPEC §1."""

    category: Category
    key: str
    content: str
    tags: list[str] = Field(default_factory=list)
    priority: Priority = Priority.NORMAL
    confidence: Confidence | None = None
    expires_at: str | None = None
    source: Source | None = None

    _key = field_validator("key")(_check_key)
    _content = field_validator("content")(_check_content)
    _tags = field_validator("tags")(normalize_tags)
    _expires = field_validator("expires_at")(_check_expires_at)


class MemoryPatch(Body):
    """The body of `PUT /memory/{id}`: fields left out stay; `expires_at: null` clears."""

    content: str | None = None
    tags: list[str] | None = None
    priority: Priority | None = None
    confidence: Confidence | None = None
    expires_at: str | None = None
    category: Category | None = None
    key: str | None = None
    source: Source | None = None

    _content = field_validator("content")(lambda v: None if v is None else _check_content(v))
    _tags = field_validator("tags")(lambda v: None if v is None else normalize_tags(v))
    _expires = field_validator("expires_at")(_check_expires_at)


def _trimmed(max_chars: int) -> Callable[[str], str]:
    """A validator: the value without surrounding whitespace, 1 to `max_chars` characters of it."""

    def check(value: str) -> str:
        value = value.strip()
        if not 1 <= len(value) <= max_chars:
            raise PydanticCustomError("length", f"must be 1-{max_chars} characters")
        return value

    return check


class MindWrite(Body):
    name: str

    _name = field_validator("name")(_trimmed(NAME_MAX_CHARS))


class KeyWrite(Body):
    label: str = "default"

    _label = field_validator("label")(_trimmed(LABEL_MAX_CHARS))


Scope = Literal["read", "write", "delete"]
ALL_SCOPE_NAMES: tuple[Scope, ...] = ("read", "write", "delete")


def _distinct_scopes(scopes: list[Scope]) -> list[Scope]:
    if len(set(scopes)) != len(scopes):
        raise PydanticCustomError("unique", "must not name a scope twice")
    return scopes


class KeyCreate(KeyWrite):
    """The body of `POST /minds/{mind_id}/keys`: a label and what the key may do (default: all)."""

    scopes: list[Scope] = Field(default_factory=lambda: list(ALL_SCOPE_NAMES), min_length=1)

    _scopes = field_validator("scopes")(_distinct_scopes)


class MindPatch(Body):
    """The body of `PATCH /minds/{mind_id}`: a new name and/or settings; what is left out stays."""

    name: str | None = None
    agent_writes_to_verified: Literal["propose", "unverify"] | None = None
    history_retention_days: int | None = Field(default=None, ge=1, le=3650)

    _name = field_validator("name")(lambda v: None if v is None else _trimmed(NAME_MAX_CHARS)(v))

    @model_validator(mode="after")
    def _something(self) -> MindPatch:
        if self.model_dump(exclude_none=True) == {}:
            raise PydanticCustomError("required", "give a name or a setting to change")
        return self


# ---------------------------------------------------------------- validation errors

_RULES = {
    "missing": "required",
    "extra_forbidden": "unknown_field",
    "enum": "enum",
    "literal_error": "enum",
    "greater_than_equal": "range",
    "less_than_equal": "range",
    "finite_number": "range",
    "too_long": "max_items",
}


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def validation_details(error: ValidationError) -> list[dict[str, str]]:
    details = []
    for item in error.errors(include_url=False):
        rule = _RULES.get(item["type"], "type" if item["type"].endswith("_type") else item["type"])
        message = item["msg"]
        if rule == "unknown_field":
            message = "is not a field this endpoint accepts"
        elif rule == "type":
            message = f"has the wrong type: {message.lower()}"
        details.append({"field": _field_path(item["loc"]), "rule": rule, "message": message})
    return details


def parse[T: BaseModel](model: type[T], body: dict[str, Any]) -> T:
    """Validate a parsed JSON object, or raise a 422 naming every field that broke a rule."""
    try:
        # Validated as JSON: strict mode then takes enum values as text but coerces no types.
        return model.model_validate_json(json.dumps(body))
    except ValidationError as error:
        details = validation_details(error)
        summary = "; ".join(f"{d['field']}: {d['message']}" for d in details)
        raise Unprocessable(summary, details=details) from None
