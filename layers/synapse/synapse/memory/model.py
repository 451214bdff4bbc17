"""The memory: its fields, the rules on what clients send, and how one write merges into another.

Validation is pydantic in strict mode over already-parsed JSON; every failure becomes a 422
whose details name the field and the rule (see `validation_details`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

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
from synapse.core.ids import new_id
from synapse.memory.kinds import Category as Category
from synapse.memory.kinds import Memory as Memory
from synapse.memory.kinds import Priority as Priority
from synapse.memory.kinds import Source as Source

DEFAULT_CONFIDENCE = {Source.USER: 1.0, Source.AGENT: 0.7}
KEY_PATTERN = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")
KEY_MAX_CHARS = 128
CONTENT_MAX_BYTES = 32 * 1024
TAGS_MAX = 20
TAG_MAX_CHARS = 64
NAME_MAX_CHARS = 100
LABEL_MAX_CHARS = 100


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


class _Body(BaseModel):
    # defer_build: a model's validator is built on its first use, not at import: a handler imports
    # every body model and validates one or two (issue 14, cold start)
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class MemoryWrite(_Body):
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


class MemoryPatch(_Body):
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


class MindWrite(_Body):
    name: str

    _name = field_validator("name")(_trimmed(NAME_MAX_CHARS))


class KeyWrite(_Body):
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


class MindPatch(_Body):
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


# ---------------------------------------------------------------- the stored memory (kinds.Memory)


def new_memory(mind_id: str, write: MemoryWrite, source: Source, at: datetime) -> Memory:
    stamp = clock.to_iso(at)
    return Memory(
        id=new_id("mem_"),
        mind_id=mind_id,
        category=write.category.value,
        key=write.key,
        content=write.content,
        tags=list(write.tags),
        priority=write.priority.value,
        source=source.value,
        verified=source is Source.USER,
        confidence=write.confidence if write.confidence is not None else DEFAULT_CONFIDENCE[source],
        expires_at=write.expires_at,
        created_at=stamp,
        updated_at=stamp,
        version=1,
    )


def _after_change(old: Memory, new: Memory, source: Source, at: datetime) -> Memory:
    """Versioning and the verification rule shared by replace and update.

    A human vouched for the old text, not the new one: an agent that changes the content or
    tags of a verified memory leaves it unverified. A user's write is verified by definition.
    """
    if source is Source.USER:
        verified = True
    else:
        verified = old.verified and (new.content, new.tags) == (old.content, old.tags)
    keep_stamp = verified and old.verified
    return replace(
        new,
        source=source.value,
        verified=verified,
        verified_at=old.verified_at if keep_stamp else None,
        verified_by=old.verified_by if keep_stamp else None,
        updated_at=clock.to_iso(at),
        version=old.version + 1,
    )


def replaced(old: Memory, write: MemoryWrite, source: Source, at: datetime) -> Memory:
    """Store-again by (category, key): id and created_at stay, everything else follows the write."""
    fresh = new_memory(old.mind_id, write, source, at)
    return _after_change(old, replace(fresh, id=old.id, created_at=old.created_at), source, at)


def patched(old: Memory, patch: MemoryPatch, source: Source, at: datetime) -> Memory:
    for field in ("category", "key"):
        sent = getattr(patch, field)
        if sent is not None and sent != getattr(old, field):
            raise Unprocessable(
                f"{field}: is immutable; store a new memory instead",
                details=[
                    {"field": field, "rule": "immutable", "message": "cannot be changed after creation"}
                ],
            )
    sent = patch.model_fields_set
    changes: dict[str, Any] = {}
    for field in ("content", "tags", "priority", "confidence", "expires_at"):
        if field not in sent:
            continue
        value = getattr(patch, field)
        if value is None and field != "expires_at":
            raise Unprocessable(
                f"{field}: cannot be null",
                details=[
                    {"field": field, "rule": "not_null", "message": "cannot be null; leave it out to keep it"}
                ],
            )
        changes[field] = value.value if isinstance(value, StrEnum) else value
    return _after_change(old, replace(old, **changes), source, at)


def verified(old: Memory, by: str, at: datetime) -> Memory:
    stamp = clock.to_iso(at)
    return replace(
        old, verified=True, verified_at=stamp, verified_by=by, updated_at=stamp, version=old.version + 1
    )
