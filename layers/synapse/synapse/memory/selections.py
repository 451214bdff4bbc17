"""What a read of memories asks for: the by-tag and list queries, as `api.queries` builds them from a
request and `reads` / `store` answer them (the recall's is `recall.query`).

Apart from those modules so that building one costs no import of the read and write paths: the
search handler, which parses its query strings in `api.queries` too, never runs them (issue 14)."""

import json
from typing import NamedTuple

from synapse.core.moments import Window


class TagQuery(NamedTuple):
    tag: str
    categories: frozenset[str] | None = None
    include_expired: bool = False
    window: Window = Window()
    include_superseded: bool = False

    def scope(self) -> str:
        shape: list[object] = [self.tag, sorted(self.categories or []), self.include_expired]
        if self.window.given:
            shape.append(self.window.scope())
        if self.include_superseded:  # only when asked: cursors made before it stay good
            shape.append(True)
        return "by-tag " + json.dumps(shape, ensure_ascii=False)


class ListFilters(NamedTuple):
    category: str | None = None
    tag: str | None = None
    priority: str | None = None
    source: str | None = None
    verified: bool | None = None
    include_expired: bool = False
    window: Window = Window()
    # What changed since (a date: from its midnight UTC), newest change first (`reads.list_memories`).
    updated_after: str | None = None
    include_superseded: bool | None = None  # None: not asked (False), so cursors made before it stay good

    def scope(self) -> str:
        shown = {**self._asdict(), "window": self.window.scope() or None}
        return "list?" + "&".join(f"{k}={v}" for k, v in sorted(shown.items()) if v is not None)
