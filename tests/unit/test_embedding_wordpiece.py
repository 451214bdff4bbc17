"""The pure-Python WordPiece gives the ids of the reference tokenizer (`tokenizers`' BertTokenizer from
the model's tokenizer.json) on a fixed set of 1,038 texts: bench questions and memories, edge cases,
random strings over many scripts. data/make_wordpiece_reference.py wrote the expected ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synapse.embedding.wordpiece import WordPiece

REFERENCE = json.loads((Path(__file__).with_name("data") / "wordpiece_reference.json").read_text("utf-8"))
# Code points assigned after the Unicode tables of the reference (U+061D, an Arabic punctuation mark of
# Unicode 14): Python calls it punctuation, the reference a letter. Texts holding one are not compared.
NEWER_THAN_REFERENCE = {"\u061d"}
CASES = [case for case in REFERENCE["cases"] if not NEWER_THAN_REFERENCE & set(case["text"])]


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return WordPiece.from_file()


def test_every_reference_text_gets_the_reference_ids(wordpiece):
    # Given texts with the ids the reference tokenizer gave them (untruncated, with [CLS] and [SEP])
    assert len(CASES) > 1000
    # When the pure-Python tokenizer encodes them
    mismatches = [c["text"] for c in CASES if wordpiece.encode(c["text"], 10**6) != c["ids"]]
    # Then every one has the same ids
    assert mismatches == []


def test_a_long_text_keeps_its_first_pieces_within_the_limit(wordpiece):
    ids = wordpiece.encode("word " * 1000, 256)
    assert len(ids) == 256
    assert ids[0] == wordpiece.cls_id and ids[-1] == wordpiece.sep_id


def test_special_tokens_written_in_text_are_taken_as_themselves(wordpiece):
    # as the reference does: "[SEP]" in a memory is the separator's id, "[sep]" is ordinary text
    assert wordpiece.tokens("a[SEP]b") == [wordpiece.vocab["a"], wordpiece.sep_id, wordpiece.vocab["b"]]
    assert wordpiece.sep_id not in wordpiece.tokens("[sep]")
