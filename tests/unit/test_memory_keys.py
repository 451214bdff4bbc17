"""A memory stored without a key: the one derivation (`synapse.memory.keys`) every door uses, through
the write body (`MemoryWrite`), and how a stored memory remembers that its key was derived."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

import pytest
from synapse.memory import keys
from synapse.memory.changes import new_memory, replaced
from synapse.memory.items import memory_body, memory_from_item
from synapse.memory.kinds import Source
from synapse.memory.model import MemoryWrite

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "variant",
    [
        "Prefers oat milk",
        "  Prefers oat milk  ",
        "prefers OAT milk",
        "Prefers\toat\n milk",
        "PREFERS  OAT  MILK",
    ],
)
def test_the_derived_key_is_the_same_for_the_same_normalized_text(variant: str) -> None:
    # Given the same text up to case and spacing
    # Then it derives the same key, every time
    key = keys.derived_key("note", "Prefers oat milk")
    assert keys.derived_key("note", variant) == key == keys.derived_key("note", variant)
    assert key == "prefers_oat_milk_87af3b"


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ("Wife is Anna, married since 2015", "wife_anna_married_since_2015_4a175d"),
        ("Straße  ÉTÉ", "strasse_ete_1f54cd"),  # folded to ASCII words
        (
            "He is allergic to peanuts and shellfish, since childhood",
            "allergic_peanuts_shellfish_since_childhood_",
        ),
        ("日本語", "note_77710a"),  # no ASCII word: the category stands in
    ],
)
def test_the_derived_key_reads_as_the_contents_first_meaningful_words(content: str, key: str) -> None:
    # Given content alone, Then its key is its first meaningful words (at most five) and a short digest
    # (fixed values: a derivation that changed between releases would duplicate every stored note)
    derived = keys.derived_key("note", content)
    assert derived.startswith(key) and len(derived) <= 128
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", derived)
    digest = hashlib.sha256(" ".join(content.split()).casefold().encode()).hexdigest()
    assert derived.endswith(digest[: keys.KEY_DIGEST_CHARS])


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Prefers oat milk", "Prefers soy milk"),
        ("Prefers oat milk", "Prefers oat milk."),
        ("oatmilk", "oat milk"),
    ],
)
def test_different_texts_derive_different_keys(one: str, other: str) -> None:
    assert keys.derived_key("note", one) != keys.derived_key("note", other)


@pytest.mark.parametrize(
    ("given", "category", "key", "derived"),
    [
        ({"content": "Likes tea"}, "note", keys.derived_key("note", "Likes tea"), True),
        (
            {"content": "Likes tea", "category": "preference"},
            "preference",
            keys.derived_key("preference", "Likes tea"),
            True,
        ),
        ({"content": "Likes tea", "key": "drink"}, "note", "drink", False),
        # a client that derived the key itself (as clients did before the server) is recognised
        ({"content": "Likes tea", "key": keys.derived_key("note", "Likes tea")}, "note", None, True),
    ],
)
def test_a_write_without_a_category_or_key_is_a_note_with_the_derived_key(
    given: dict[str, str], category: str, key: str | None, derived: bool
) -> None:
    # When a body leaves out its category, its key, or both
    write = MemoryWrite.from_body(given)
    # Then the write is a note (unless it says otherwise), keyed by its content, and knows it
    assert (write.category.value, write.key) == (category, key or keys.derived_key(category, "Likes tea"))
    assert write.key_derived is derived
    assert write.sent == frozenset(given)  # what the client sent: the derived key is the server's


def test_a_stored_memory_records_a_derived_key_and_keeps_it_across_writes() -> None:
    # Given a note stored from content alone
    first = new_memory("m_x", MemoryWrite.from_body({"content": "Walks to work"}), Source.AGENT, AT)
    assert first.key == "walks_work_cf7811" and first.key_derived is True
    # When the same text is stored again with that key spelled out, Then it is still a derived key
    again = MemoryWrite.from_body({"content": "walks TO work", "key": first.key})
    assert replaced(first, again, Source.AGENT, AT).key_derived is True
    # And a chosen key is not one
    chosen = new_memory("m_x", MemoryWrite.from_body({"content": "x", "key": "commute"}), Source.USER, AT)
    assert chosen.key_derived is False


def test_a_memory_stored_before_the_flag_is_recognised_by_its_key() -> None:
    # Given stored items from before memories recorded `key_derived`
    derived = new_memory("m_x", MemoryWrite.from_body({"content": "Walks to work"}), Source.AGENT, AT)
    chosen = derived._replace(key="commute", key_derived=False)
    older = [{k: v for k, v in memory_body(m).items() if k != "key_derived"} for m in (derived, chosen)]
    # When they are read, Then a key that is its content's derivation is known as derived
    assert [memory_from_item(item).key_derived for item in older] == [True, False]
    # And a stored flag is what counts once it is there
    assert memory_from_item(memory_body(derived._replace(content="Cycles to work"))).key_derived is True
