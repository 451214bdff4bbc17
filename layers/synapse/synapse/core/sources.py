"""Who wrote a memory or made a change: a person or an agent (re-exported by `memory.kinds`).

Apart from the memory's own vocabularies because the authorizer names a principal's source and
needs nothing else of memories (issue 35, cold start)."""

from enum import StrEnum


class Source(StrEnum):
    USER = "user"
    AGENT = "agent"
