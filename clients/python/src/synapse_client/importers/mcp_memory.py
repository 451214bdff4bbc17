"""The MCP reference `memory` server's knowledge graph: its JSON Lines file (`memory.jsonl`).

Shape (modelcontextprotocol/servers: src/memory/index.ts, `saveGraph`): one JSON object a line,
`{"type": "entity", "name", "entityType", "observations": [text, …]}` or
`{"type": "relation", "from", "to", "relationType"}`.

Mapping: one memory per entity (entities of one key, i.e. of one name or of names that differ
only in case or spacing, are merged: the server never writes such, a hand-made file may);
content = `Name (entityType)`, then each observation on its own line, then the relations from it
(`- relationType → To`); key = `entity_` + the name (see `key_of`); category `identity` for the
entity the server's prompt calls `default_user` (or `user`), else the entityType where it names one
of SPEC's eight, else `fact`; tags = `mcp_memory` and the entityType. A relation whose `from` names
no entity makes a memory of its own for that name. Lost: nothing of the text; the graph becomes
prose (relations are not edges Synapse can traverse), and the file has no timestamps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from synapse_client.importers import Imported, category_of, key_of

USER_NAMES = {"default_user", "user"}


@dataclass
class Entity:
    name: str
    entity_type: str = ""
    observations: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)


def read(path: Path) -> Imported:
    imported = Imported()
    entities: dict[str, Entity] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path.name} line {number}: not JSON ({error.msg})") from None
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity" and isinstance(item.get("name"), str):
            entity = entities.setdefault(key_of(item["name"], "entity"), Entity(item["name"]))
            entity.entity_type = entity.entity_type or str(item.get("entityType") or "")
            observations = item.get("observations") or []
            entity.observations += [str(o) for o in observations if str(o) not in entity.observations]
        elif kind == "relation" and isinstance(item.get("from"), str):
            entity = entities.setdefault(key_of(item["from"], "entity"), Entity(item["from"]))
            entity.relations.append(f"- {item.get('relationType', 'related_to')} → {item.get('to', '?')}")
        else:
            imported.warnings.append(f"{path.name} line {number}: neither an entity nor a relation, skipped")
    for key, entity in entities.items():
        user = entity.name.strip().lower() in USER_NAMES
        head = f"{entity.name} ({entity.entity_type})" if entity.entity_type else entity.name
        lines = [head, *entity.observations]
        if entity.relations:
            lines += ["Relations:", *entity.relations]
        imported.add(
            f"mcp-memory entity {entity.name!r}",
            category="identity" if user else category_of(entity.entity_type, {}, "fact"),
            key=key,
            content="\n".join(lines),
            tags=["mcp_memory", entity.entity_type],
        )
    return imported
