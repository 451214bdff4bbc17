"""basic-memory: a folder of Markdown notes (or one note), each with YAML front matter.

Shape (basicmachines-co/basic-memory: src/basic_memory/markdown/entity_parser.py and plugins.py):
front matter `title`, `type`, `permalink`, `tags` (a list, or a comma-separated string), and in the
body observations `- [category] text #tag (context)` and relations `- relation_type [[Target]]`.

Mapping: one memory per note; content = the body as written (observations and relations stay
readable Markdown), headed by `# title` unless it starts with a top heading; key = `note_` + the
permalink (else the title, else the file's path in the folder); category = the note's `type` where
it names one of SPEC's eight (`note` otherwise); tags = `basic_memory`, the front matter's tags,
then the observations' `#tags` and `[category]` names. Two notes of one key: the later one (by path)
gets a hash of its path appended, with a warning. Lost: the front matter's other fields, `created`/
`modified` (the server stamps its own), and the relations as links (they stay as text).
"""

from __future__ import annotations

import re
from pathlib import Path

from synapse_client.importers import Imported, category_of, key_of, short_hash

_OBSERVATION = re.compile(r"^\s*-\s+\[([^\[\]()]+)\]\s+(.+)$")
_HASHTAG = re.compile(r"(?<![\w&])#([\w][\w/-]*)")


def front_matter(text: str) -> tuple[dict[str, str | list[str]], str]:
    """The front matter's simple fields (`key: value`, `key: [a, b]`, or `key:` then `- item` lines)
    and the body after it. Enough for the fields read here; no YAML library needed."""
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end == -1:
        return {}, text
    fields: dict[str, str | list[str]] = {}
    last = ""
    for line in text[3:end].splitlines():
        item = re.match(r"^\s*-\s+(.*)$", line)
        current = fields.get(last)
        if item and last and (current == "" or isinstance(current, list)):
            fields[last] = [*(current if isinstance(current, list) else []), unquote(item[1])]
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if pair:
            last, value = pair[1], pair[2].strip()
            if value.startswith("[") and value.endswith("]"):
                fields[last] = [unquote(v) for v in value[1:-1].split(",") if v.strip()]
            else:
                fields[last] = unquote(value)
    return fields, text[end + 4 :].lstrip("\n")


def unquote(value: str) -> str:
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" else value


def as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    return [part.strip() for part in value.split(",") if part.strip()]


def notes_of(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ValueError(f"{path}: no such file or folder")
    return sorted(p for p in path.rglob("*.md") if not any(part.startswith(".") for part in p.parts))


def read(path: Path) -> Imported:
    imported = Imported()
    base = path if path.is_dir() else path.parent
    keys: set[str] = set()
    for note in notes_of(path):
        relative = note.relative_to(base).as_posix()
        fields, body = front_matter(note.read_text(encoding="utf-8"))
        title = str(fields.get("title") or note.stem)
        name = str(fields.get("permalink") or fields.get("title") or relative.removesuffix(".md"))
        key = key_of(name, "note")
        if key in keys:
            key = key_of(f"{name} {short_hash(relative)}", "note")
            imported.warnings.append(f"basic-memory {relative}: an earlier note has its key: stored as {key}")
        keys.add(key)
        tags = ["basic_memory", *as_list(fields.get("tags"))]
        for line in body.splitlines():
            observed = _OBSERVATION.match(line)
            if observed:
                tags.append(observed[1])
                tags += _HASHTAG.findall(observed[2])
        content = body if body.lstrip().startswith("# ") or not body.strip() else f"# {title}\n\n{body}"
        imported.add(
            f"basic-memory {relative}",
            category=category_of(str(fields.get("type") or ""), {}, "note"),
            key=key,
            content=content.strip(),
            tags=tags,
        )
    return imported
