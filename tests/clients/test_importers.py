"""The importers (issue 24 item 4) read each tool's real format (fixtures/import, sources cited in
its README) into records the server accepts: SPEC keys derived the same way every time, tags within
the rules, content within 32 KiB, and a warning for each thing they had to change."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from synapse_client import importers, transfer
from synapse_client.importers import Imported

FIXTURES = Path(__file__).parent / "fixtures" / "import"
KEY = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")


def assert_valid(found: Imported) -> None:
    """Every record passes SPEC §1's checks, and no two share a (category, key)."""
    for record in found.records:
        assert record["category"] in importers.CATEGORIES
        assert KEY.match(record["key"]) and len(record["key"]) <= 128, record["key"]
        assert 0 < len(record["content"].encode("utf-8")) <= 32 * 1024
        tags = record.get("tags", [])
        assert len(tags) <= 20 and all(1 <= len(t) <= 64 and t == t.strip().lower() for t in tags)
        assert "source" not in record and "verified" not in record  # an agent's, unverified
    assert len({r["key"] for r in found.records}) == len(found.records)


def by_key(found: Imported) -> dict[str, dict[str, object]]:
    return {r["key"]: r for r in found.records}


def test_mem0_get_all_maps_each_memory_by_its_id() -> None:
    # Given mem0's get_all answer (odd cases: an empty memory, non-ASCII, long and too many tags)
    found = importers.read("mem0", FIXTURES / "mem0" / "get_all.json")
    # Then each memory with text is a record keyed by its mem0 id
    assert_valid(found)
    records = by_key(found)
    assert set(records) == {
        "mem0_f4cbdb08_7062_4f3e_8eb2_9f5c80dfe64c",
        "mem0_a2b8c3d4_5e6f_7g8h_9i0j_1k2l3m4n5o6p",
        "mem0_0c9a1e52_3b7d_4f60_9a11_5e2c7d8b4f03",
        "mem0_7e6d5c4b_3a29_4180_9f7e_6d5c4b3a2918",
    }
    trip = records["mem0_f4cbdb08_7062_4f3e_8eb2_9f5c80dfe64c"]
    assert trip["category"] == "preference" and trip["tags"] == ["mem0", "travel"]
    assert trip["expires_at"] == "2031-07-10T00:00:00Z"
    assert records["mem0_a2b8c3d4_5e6f_7g8h_9i0j_1k2l3m4n5o6p"]["category"] == "preference"  # metadata
    umlauts = records["mem0_0c9a1e52_3b7d_4f60_9a11_5e2c7d8b4f03"]
    assert umlauts["category"] == "identity" and "Zürich" in str(umlauts["content"])
    # And what it changed is said
    assert any("empty content, skipped" in w for w in found.warnings)
    assert any("over 64 characters, dropped" in w for w in found.warnings)
    assert any("22 tags, over 20" in w for w in found.warnings)


def test_mem0_reads_a_bare_list_and_refuses_what_is_not_a_dump(tmp_path: Path) -> None:
    items = json.loads((FIXTURES / "mem0" / "get_all.json").read_text(encoding="utf-8"))["results"]
    bare = tmp_path / "list.json"
    bare.write_text(json.dumps(items), encoding="utf-8")
    assert len(importers.read("mem0", bare).records) == 4
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"memories_of": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a mem0 dump"):
        importers.read("mem0", wrong)


def test_mcp_memory_makes_a_memory_per_entity_with_its_observations_and_relations() -> None:
    # Given the MCP memory server's graph (a name twice, non-ASCII, no observations, a dangling relation)
    found = importers.read("mcp-memory", FIXTURES / "mcp-memory" / "memory.jsonl")
    assert_valid(found)
    records = by_key(found)
    # Then the user entity is identity, and duplicate names merge their observations once each
    user = records["entity_default_user"]
    assert user["category"] == "identity"
    assert user["content"] == (
        "default_user (person)\nPrefers dark roast coffee\nWorks remotely from Lisbon\n"
        "Relations:\n- works_on → Synapse"
    )
    jose = [r for k, r in records.items() if k.startswith("entity_jose_muller_")]
    assert len(jose) == 1 and str(jose[0]["content"]).count("Speaks Português") == 1
    assert records["entity_synapse"]["category"] == "project"
    assert records["entity_ghost"]["content"] == "Ghost\nRelations:\n- haunts → Synapse"
    assert records["entity_empty"]["content"] == "Empty (thing)"


def test_basic_memory_reads_front_matter_observations_and_tags() -> None:
    found = importers.read("basic-memory", FIXTURES / "basic-memory" / "notes")
    assert_valid(found)
    records = by_key(found)
    coffee = records["note_coffee_brewing_methods"]
    assert coffee["category"] == "note"
    assert coffee["tags"] == [
        "basic_memory", "coffee", "brewing", "method", "preference", "tip", "grinding", "technique",
    ]  # fmt: skip
    assert "- relates_to [[Coffee Bean Origins]]" in str(coffee["content"])
    jose = next(r for k, r in records.items() if k.startswith("note_people_jose_muller_"))
    assert str(jose["content"]).startswith("# José Müller\n")
    assert jose["tags"] == ["basic_memory", "people", "colleague", "fact", "portugal", "preference"]
    # And a second note with the same permalink is kept apart, with a warning
    assert any(k.startswith("note_coffee_brewing_methods_") for k in records)
    assert any("an earlier note has its key" in w for w in found.warnings)
    assert any("empty.md: empty content, skipped" in w for w in found.warnings)


def test_a_huge_note_is_split_under_the_content_limit_with_a_warning(tmp_path: Path) -> None:
    # Given a basic-memory note of about 70 KB (over the 32 KiB limit), with non-ASCII all through
    line = "- [fact] Über Straßen und Flüsse zieht der Nebel — 霧が川を渡る #weather\n"
    note = tmp_path / "huge.md"
    note.write_text("---\ntitle: Huge\npermalink: huge\n---\n\n" + line * 800, encoding="utf-8")
    found = importers.read("basic-memory", note)
    # Then it is split at line ends into parts that each fit, and the split is reported
    assert_valid(found)
    keys = [r["key"] for r in found.records]
    assert keys[:3] == ["note_huge", "note_huge_part_2", "note_huge_part_3"]
    joined = "\n".join(str(r["content"]) for r in found.records)
    assert joined.count("#weather") == 800
    assert any("over the 32 KiB limit: split into" in w for w in found.warnings)


def test_keys_are_the_same_every_time_and_never_break_the_spec_rule() -> None:
    names = ["Alice Smith", "Café ☕", "C++", "", "x" * 300, "名前"]
    keys = [importers.key_of(name, "entity") for name in names]
    assert keys == [importers.key_of(name, "entity") for name in names]
    assert keys[0] == "entity_alice_smith" == importers.key_of("alice_smith", "entity")
    assert all(KEY.match(k) and len(k) <= 128 - 8 for k in keys)
    assert len(set(keys)) == len(keys)
    assert importers.key_of("名前").startswith("h_")


def test_a_lone_surrogate_in_a_file_becomes_a_replacement_character_with_a_warning(tmp_path: Path) -> None:
    # Given a mem0 dump whose memory, id and category hold lone UTF-16 surrogates (broken escapes)
    dump = tmp_path / "mem0.json"
    item = {"id": "abc\ud800", "memory": "Lives in Berlin \udc00", "categories": ["travel\ud800"]}
    dump.write_text(json.dumps({"results": [item]}), encoding="utf-8")  # as the escapes "\ud800"
    # When it is read
    found = importers.read("mem0", dump)
    # Then the record is text the server takes (U+FFFD in place), and the change is said
    assert_valid(found)
    (record,) = found.records
    assert record["content"] == "Lives in Berlin \ufffd" and record["tags"] == ["mem0", "travel\ufffd"]
    json.dumps(found.records, ensure_ascii=False).encode("utf-8")
    assert any("lone UTF-16 surrogate" in w for w in found.warnings)
    "\n".join(found.warnings).encode("utf-8")  # printable


def test_an_export_line_with_a_lone_surrogate_is_refused_naming_the_line() -> None:
    # Given an export file whose second line was edited to hold a lone surrogate
    lines = [json.dumps({"key": "a", "content": "x"}), json.dumps({"key": "b", "content": "\ud800"})]
    # When `synapse import` reads it, Then it stops at that line, as the server would refuse it
    with pytest.raises(ValueError, match=r"line 2: holds a lone UTF-16 surrogate"):
        list(transfer.read_lines(lines))


def test_mem0_times_become_occurred_at(tmp_path: Path) -> None:
    # Given mem0 items with an event `timestamp` (epoch seconds, or text), or only their created_at
    items = [
        {"id": "a", "memory": "Met Anna at the conference", "timestamp": 1_733_616_000},
        {"id": "b", "memory": "Moved", "timestamp": "2024-05-01", "created_at": "2024-06-01T10:00Z"},
        {"id": "c", "memory": "Likes jazz", "created_at": "2024-07-20T01:43:47.282373-07:00"},
        {"id": "d", "memory": "Plays chess", "created_at": "2024-07-21T08:00:00"},
        {"id": "e", "memory": "No time at all"},
    ]
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": items}), encoding="utf-8")
    # When it is read
    records = by_key(importers.read("mem0", dump))
    # Then each says when it was said, as the server takes it (a zone, or a date)
    assert records["mem0_a"]["occurred_at"] == "2024-12-08T00:00:00Z"
    assert records["mem0_b"]["occurred_at"] == "2024-05-01"
    assert records["mem0_c"]["occurred_at"] == "2024-07-20T01:43:47.282373-07:00"
    assert records["mem0_d"]["occurred_at"] == "2024-07-21T08:00:00Z"
    assert "occurred_at" not in records["mem0_e"]
