"""Diacritic folding for every script, and mapping a snippet cut from folded text back onto the original.

unicode61's `remove_diacritics` only knows Latin letters (it leaves Ё, ά, ῆ alone), so text is folded
before FTS5 sees it, documents and queries alike; case is left to the tokenizer.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

# Snippet markers: control characters, which `fold` turns into spaces, so text never contains them.
MARK_OPEN, MARK_CLOSE, ELLIPSIS = "\x02", "\x03", "\x04"
_CONTROLS = {code: " " for code in [*range(32), 127]}
_MARKS = re.compile(f"([{MARK_OPEN}{MARK_CLOSE}])")


@functools.cache
def _fold_char(ch: str) -> str:
    if unicodedata.category(ch) in {"Cc", "Cs"}:
        return " "
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if len(base) == 1 else ch


class _FoldTable(dict[int, str]):
    """str.translate table filled on first sight of each character."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLDS = _FoldTable()


def fold(text: str) -> str:
    """Strip diacritics, one character for one character.

    Keeping the length lets a snippet cut from the folded text be mapped back onto the original.
    """
    return text.translate(_CONTROLS) if text.isascii() else text.translate(_FOLDS)


def restore_snippet(
    snippet: str, columns: Iterable[tuple[str | None, str | None]], mark: tuple[str, str]
) -> str:
    """Map a snippet cut from folded text back onto the original text of its column.

    `columns` are the row's (folded, original) texts, given only where folding changed the text
    (None elsewhere): most rows (plain ASCII and the like) need no mapping at all.
    """
    lead, trail = snippet.startswith(ELLIPSIS), snippet.endswith(ELLIPSIS) and len(snippet) > 1
    body = snippet.strip(ELLIPSIS)
    plain = body.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")
    for folded, original in columns:
        at = folded.find(plain) if plain and folded and original else -1
        if at >= 0 and original is not None:
            body = _onto(body, original, at)
            break
    body = body.replace(MARK_OPEN, mark[0]).replace(MARK_CLOSE, mark[1])
    return ("…" if lead else "") + body + ("…" if trail else "")


def _onto(body: str, original: str, at: int) -> str:
    """`body`'s marks around the same stretch of `original`, starting at `at`."""
    out, i = [], at
    for piece in _MARKS.split(body):
        if piece in (MARK_OPEN, MARK_CLOSE):
            out.append(piece)
        else:
            out.append(original[i : i + len(piece)])
            i += len(piece)
    return "".join(out)
