"""BERT's uncased WordPiece tokenizer in plain Python, the one all-MiniLM-L6-v2 was trained with.

Pure Python so the embedding layer needs no `tokenizers` wheel (11.5 MB, and its package drags in
huggingface_hub and a newer click than the SAM CLI allows); a query of a dozen words tokenizes in tens
of microseconds, far below the model's milliseconds. It reproduces the reference (`tokenizers`' fast
BertTokenizer from the model's tokenizer.json: BertNormalizer(clean_text, handle_chinese_chars,
strip_accents, lowercase) → BertPreTokenizer → WordPiece(max 100 chars a word) → [CLS] … [SEP]);
tests/unit/test_embedding_wordpiece.py checks the ids against that reference on a fixed set.

vocab.txt beside this file is the model's own (30,522 entries; provenance and sha256 in NOTICE).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

VOCAB_PATH = Path(__file__).with_name("vocab.txt")
# sha256 of vocab.txt: a vocabulary other than the model's gives wrong ids silently.
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
MAX_CHARS_PER_WORD = 100  # a longer word is one [UNK], as in the reference
PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
_SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, "[MASK]")
# The reference matches its special tokens in the raw text (they are not normalized) before anything else.
_SPECIAL_SPLIT = re.compile("(" + "|".join(re.escape(t) for t in _SPECIAL_TOKENS) + ")")
# Unicode White_Space that survives the control-character filter (Rust's char::is_whitespace).
_WHITESPACE = frozenset(
    "\t\n\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_CONTROL_CATEGORIES = frozenset(
    {"Cc", "Cf", "Co", "Cs"}
)  # not Cn: the reference keeps unassigned code points
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _is_cjk(cp: int) -> bool:
    return any(low <= cp <= high for low, high in _CJK_RANGES)


@functools.cache
def _char_class(ch: str) -> str:
    """'drop', 'space', 'cjk' or 'keep': what the reference's clean_text and handle_chinese_chars do."""
    if ch in "\t\n\r":
        return "space"
    if ch == "\x00" or ch == "\ufffd" or unicodedata.category(ch) in _CONTROL_CATEGORIES:
        return "drop"
    if ch in _WHITESPACE:
        return "space"
    return "cjk" if _is_cjk(ord(ch)) else "keep"


@functools.cache
def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")


# ASCII text takes a fast path: controls dropped (tab, newline and return become spaces), lowercased,
# then every run of letters and digits is a word and every other printable character is punctuation.
_ASCII_CLEAN = {c: None for c in [*range(0, 9), 11, 12, *range(14, 32), 127]} | {9: 32, 10: 32, 13: 32}
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")


def normalize(text: str) -> str:
    """BertNormalizer: drop controls, whitespace → space, pad CJK, strip accents (NFD, drop Mn), lowercase."""
    if text.isascii():
        return text.translate(_ASCII_CLEAN).lower()
    kept: list[str] = []
    for ch in text:
        kind = _char_class(ch)
        if kind == "keep":
            kept.append(ch)
        elif kind == "space":
            kept.append(" ")
        elif kind == "cjk":
            kept.append(f" {ch} ")
    decomposed = unicodedata.normalize("NFD", "".join(kept))
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()


def split_words(normalized: str) -> list[str]:
    """BertPreTokenizer: split on whitespace, each punctuation mark a word of its own."""
    if normalized.isascii():
        return _ASCII_WORDS.findall(normalized)
    words: list[str] = []
    current: list[str] = []
    for ch in normalized:
        if ch.isspace() or _is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
            if not ch.isspace():
                words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


class WordPiece:
    """Text → token ids of the uncased BERT vocabulary; one instance per vocabulary, safe across threads."""

    def __init__(self, vocab: Sequence[str]) -> None:
        self.vocab = {token: index for index, token in enumerate(vocab)}
        self.unk_id = self.vocab[UNK]
        self.cls_id = self.vocab[CLS]
        self.sep_id = self.vocab[SEP]
        self.pad_id = self.vocab[PAD]
        self._pieces = functools.lru_cache(maxsize=65536)(self._pieces_uncached)

    @classmethod
    def from_file(cls, path: Path = VOCAB_PATH) -> WordPiece:
        return cls(path.read_text(encoding="utf-8").splitlines())

    def _pieces_uncached(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first pieces of one word; a word with an unmatchable part is one [UNK]."""
        if len(word) > MAX_CHARS_PER_WORD:
            return (self.unk_id,)
        vocab = self.vocab
        ids: list[int] = []
        start, length = 0, len(word)
        while start < length:
            end = length
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return (self.unk_id,)
            start = end
        return tuple(ids)

    def tokens(self, text: str) -> list[int]:
        """The ids of text's tokens, without [CLS]/[SEP] and untruncated."""
        ids: list[int] = []
        for index, segment in enumerate(_SPECIAL_SPLIT.split(text)):
            if index % 2:  # a special token written in the text, taken as itself
                ids.append(self.vocab[segment])
                continue
            for word in split_words(normalize(segment)):
                ids.extend(self._pieces(word))
        return ids

    def encode(self, text: str, max_length: int) -> list[int]:
        """[CLS] + text's ids + [SEP], the text's part cut so the whole is at most max_length ids."""
        return [self.cls_id, *self.tokens(text)[: max_length - 2], self.sep_id]
