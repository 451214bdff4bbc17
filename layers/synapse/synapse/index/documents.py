"""What gets indexed: a memory's indexed part (`Doc`), and a change to the index (`Change`)."""

from typing import Any, NamedTuple

from synapse.memory.kinds import Priority


class Unindexable(Exception):
    """A change that cannot be applied (malformed record, unsafe mind id): a poison record."""


class Doc(NamedTuple):
    """The indexed part of a memory."""

    id: str
    mind_id: str
    category: str
    key: str
    content: str
    tags: tuple[str, ...]
    priority: str
    updated_at: str
    expires_at: str | None
    version: int
    created_at: str | None = None  # what relative dates in the content count from (`when.content`)
    occurred_at: str | None = None  # when the event happened: one of the days the memory is about
    superseded_by: str | None = None  # the memory that replaced it: searches leave it out by default

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "Doc":
        """From a memory item of the table (plain values, as `tables.load` returns them)."""
        try:
            doc = cls(
                id=str(item["id"]),
                mind_id=str(item["mind_id"]),
                category=str(item["category"]),
                key=str(item["key"]),
                content=str(item["content"]),
                tags=tuple(str(t) for t in item.get("tags") or ()),
                priority=str(item.get("priority") or Priority.NORMAL.value),
                updated_at=str(item["updated_at"]),
                expires_at=str(item["expires_at"]) if item.get("expires_at") else None,
                version=int(item["version"]),
                created_at=str(item["created_at"]) if item.get("created_at") else None,
                occurred_at=str(item["occurred_at"]) if item.get("occurred_at") else None,
                superseded_by=str(item["superseded_by"]) if item.get("superseded_by") else None,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise Unindexable(f"not a memory item: {error!r}") from None
        if doc.priority not in Priority.__members__.values():
            raise Unindexable(f"unknown priority {doc.priority!r}")
        return doc

    @property
    def priority_rank(self) -> int:
        return Priority(self.priority).rank


class Change(NamedTuple):
    """One memory's new state (`doc`) or its removal at `version` (`doc is None`)."""

    mind_id: str
    memory_id: str
    version: int
    doc: Doc | None

    @classmethod
    def upsert(cls, doc: Doc) -> "Change":
        return cls(doc.mind_id, doc.id, doc.version, doc)

    @classmethod
    def removal(cls, item: dict[str, Any]) -> "Change":
        try:
            return cls(str(item["mind_id"]), str(item["id"]), int(item["version"]), None)
        except (KeyError, TypeError, ValueError) as error:
            raise Unindexable(f"not a memory item: {error!r}") from None
