"""JSON from outside, read one way at every door (REST bodies, /mcp, inbound hooks, batches and
imports, restore lines), and text stored before that rule made readable again.

A document is UTF-8, holds no NaN or Infinity (nor a number too large to be finite), nests at most
MAX_DEPTH levels, and is text throughout: a lone UTF-16 surrogate (JSON's escape "\\ud800" with no
partner; a valid pair is one character once parsed) in any string or object key is refused. Such a
string has no UTF-8 form, so once stored it fails every later answer, backup and index write that
holds it. `repaired` is the read side: stored values that predate the rule come back with U+FFFD
in place of each lone surrogate, so the mind reads again.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 32
REPLACEMENT = "\ufffd"
SURROGATE_RULE = "text"
SURROGATE_MESSAGE = "holds a lone UTF-16 surrogate (\\ud800-\\udfff): not text"


class Unreadable(ValueError):
    """Input that is not JSON as Synapse reads it. `rule` names the rule (`json`, `depth`, `text`),
    `field` where it broke (a path such as `tags[0]`; "" for the document itself), and `message`
    says why in words that never repeat the offending text (the caller puts them in its own error)."""

    def __init__(self, rule: str, message: str, field: str = "") -> None:
        super().__init__(message)
        self.rule, self.message, self.field = rule, message, field


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:20]} is too large")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, level + 1) for child in children)
    return deepest


def parse(data: bytes | str) -> Any:
    """The document's syntax: UTF-8, no NaN/Infinity or infinite number, at most MAX_DEPTH levels;
    else Unreadable. Its text is not checked: `read` does both; /mcp checks each message's text
    itself (`lone_surrogate`), so that the error answers the message's own id."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        parsed = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise Unreadable("json", f"is not valid JSON: {error}") from None
    if _depth(parsed) > MAX_DEPTH:
        raise Unreadable("depth", f"nests deeper than {MAX_DEPTH} levels")
    return parsed


def is_text(value: str) -> bool:
    """Whether a string has a UTF-8 form (holds no lone surrogate)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def lone_surrogate(value: Any) -> str | None:
    """The path of the first string or object key holding a lone surrogate (`tags[0]`,
    `params.arguments.key`; "" for a bare string), else None. A key is named repaired, so the
    path itself is always text."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not is_text(node):
                return path
        elif isinstance(node, dict):
            for key, child in reversed(node.items()):
                shown = _child(path, key if is_text(key) else repaired_text(key))
                if not is_text(key):
                    return shown
                stack.append((child, shown))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(node))))
    return None


def check_text(value: Any) -> None:
    """Unreadable(`text`) naming the first field that holds a lone surrogate; nothing if none does."""
    field = lone_surrogate(value)
    if field is not None:
        raise Unreadable(SURROGATE_RULE, SURROGATE_MESSAGE, field)


def read(data: bytes | str) -> Any:
    """A document as every door reads one: `parse`, then `check_text`."""
    parsed = parse(data)
    check_text(parsed)
    return parsed


def repaired_text(value: str) -> str:
    """The string with each lone surrogate replaced by U+FFFD (itself when it has none)."""
    if is_text(value):
        return value
    # Through UTF-16: a split pair becomes its one character again, a lone half one U+FFFD.
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def repaired(value: Any) -> Any:
    """A JSON-like value (strings, lists, dicts with string keys, anything else as is) with every
    lone surrogate replaced: how a value stored before `read` refused them is read and answered."""
    if isinstance(value, str):
        return repaired_text(value)
    if isinstance(value, list | tuple):
        return [repaired(item) for item in value]
    if isinstance(value, dict):
        return {repaired(key): repaired(item) for key, item in value.items()}
    return value
