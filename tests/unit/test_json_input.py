"""The one JSON reader of every door (`core.json_input`), and the repair of text stored before it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.api.http import Response
from synapse.core import json_input
from synapse.storage import tables

LONE = "\ud800"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('"\\ud800"', ""),
        ('{"tags": ["ok", "\\udfff"]}', "tags[1]"),
        ('{"a": {"b": [{"c": "x\\ud800y"}]}}', "a.b[0].c"),
        ('{"\\ud800k": 1}', "\ufffdk"),
        ('{"params": {"arguments": {"\\udc00": {"x": 1}}}}', "params.arguments.\ufffd"),
    ],
)
def test_a_lone_surrogate_anywhere_is_refused_naming_where(text: str, field: str) -> None:
    # When a document holds a lone surrogate in a string or an object key, at any depth
    with pytest.raises(json_input.Unreadable) as refused:
        json_input.read(text.encode())
    # Then it is refused by the `text` rule, naming the path (itself text)
    assert (refused.value.rule, refused.value.field) == ("text", field)
    assert json_input.is_text(refused.value.message + refused.value.field)


def test_a_valid_surrogate_pair_is_one_character_and_is_read() -> None:
    assert json_input.read(b'{"emoji": "\\ud83d\\ude00"}') == {"emoji": "\U0001f600"}


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (b'{"c": NaN}', "json"),
        (b'{"c": -Infinity}', "json"),
        (b'{"c": 1e999}', "json"),
        (b'{"c": ' + b"9" * 5000 + b"}", "json"),
        (b"\xed\xa0\x80", "json"),  # a surrogate's UTF-8-like bytes are not UTF-8
        (b"[" * 33 + b"]" * 33, "depth"),
    ],
)
def test_what_is_not_json_as_synapse_reads_it_is_refused(text: bytes, rule: str) -> None:
    with pytest.raises(json_input.Unreadable) as refused:
        json_input.read(text)
    assert refused.value.rule == rule


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (f"a{LONE}b", "a\ufffdb"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair split in storage is one character again
        (f"{LONE}{LONE}", "\ufffd\ufffd"),
        ("Schäfer \ufffd\ufffd\ufffd", "Schäfer \ufffd\ufffd\ufffd"),  # text is left as it is
    ],
)
def test_repair_replaces_each_lone_surrogate_and_nothing_else(stored: str, shown: str) -> None:
    assert json_input.repaired_text(stored) == shown


def test_a_loaded_item_is_repaired_but_its_address_is_kept_as_stored() -> None:
    # Given an item as DynamoDB returns it, holding lone surrogates in its key and its values
    wire: dict[str, Any] = {
        "pk": {"S": "m_1"},
        "sk": {"S": f"TAG#01:{LONE}#2#x"},
        "memory": {"M": {"tags": {"L": [{"S": LONE}]}, "content": {"S": f"x{LONE}"}}},
        "name": {"S": LONE},
    }
    # When it is loaded
    item = tables.load(wire)
    # Then every value is text, and the sort key still names the stored item
    assert item["sk"] == f"TAG#01:{LONE}#2#x"
    assert item["memory"] == {"tags": ["\ufffd"], "content": "x\ufffd"} and item["name"] == "\ufffd"
    json.dumps({k: v for k, v in item.items() if k != "sk"}, ensure_ascii=False).encode("utf-8")


def test_an_answer_holding_a_lone_surrogate_is_sent_as_utf_8_with_replacement_characters() -> None:
    # Given a payload that somehow holds a lone surrogate (the last guard, behind the repair on load)
    payload = {"memories": [{"tags": [LONE]}], LONE: ("x", LONE)}
    # When it is answered as JSON or text, Then the body has a UTF-8 form, U+FFFD in place
    body = Response.json(payload).body
    assert json.loads(body.encode("utf-8")) == {"memories": [{"tags": ["\ufffd"]}], "\ufffd": ["x", "\ufffd"]}
    assert Response.text(f"Mind: {LONE}").body.encode("utf-8") == "Mind: \ufffd".encode()
