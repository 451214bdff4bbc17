"""How much a hit found by meaning alone depends on the words the question asks about: the drop of
its similarity when the question's most telling word is left out (`relevance.band` reads it).

A memory close to many questions (a hub of the mind: "Doesn't drink alcohol" is at 0.29-0.31 of
"Does he have any tattoos?", "Does he snore?", "Does he own a boat?") stays as close when the thing
asked about is left out ("Does he have any?"): it is close to the question's shape, not to what it
asks. An answer is not: "Has a golden retriever named Biscuit" falls from 0.53 to 0.34 without
"dog", "Nearsighted, wears contact lenses" from 0.44 to 0.07 without "glasses". The similarity alone
does not tell them apart (the no-answer questions' best hits at 0.29-0.39, answers by paraphrase
from 0.23; docs/search.md, "Measured relevance"); the drop does, for one embedding a word of the
question, and only for the hits whose score leaves it open (`relevance.needs_check`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from synapse.index.folding import fold

# The words left out one at a time, the question's first ones: a question's embedding costs ~2 ms,
# and a longer question is rarely answered by meaning alone (its words find the answer).
MAX_WORDS = 6
_WORD = re.compile(r"[^\W_]+")


def without_each(raw: str, labels: Sequence[str]) -> list[str]:
    """The question as typed with each word of `labels` (the query's clauses: folded, lowercased)
    left out in turn: every token holding it ("grandmother's", "short-sighted"). A label no token
    holds is skipped; a question of one word gives the empty text."""
    tokens = raw.split()
    parts = [set(_WORD.findall(fold(token).lower())) for token in tokens]
    left: list[str] = []
    for label in labels[:MAX_WORDS]:
        kept = [token for token, held in zip(tokens, parts, strict=True) if label not in held]
        if len(kept) < len(tokens):
            left.append(" ".join(kept))
    return left


class Dependence:
    """The question's texts without each word, embedded once a ranking (lazily: most rankings have
    no hit to check), and each checked hit's drop. `meaning`: the question's vector and the
    generation's matrix (`vectors.Matrix`); `embed`: a text's vector, or None."""

    def __init__(
        self, raw: str, labels: Sequence[str], meaning: tuple[Any, Any], embed: Callable[[str], Any]
    ) -> None:
        self._raw, self._labels, self._embed = raw, labels, embed
        self._question, self._matrix = meaning
        self._texts: list[str] | None = None
        self._without: list[Any | None] = []  # the texts' vectors, as far as embedded

    def drop(self, memory_id: str, enough: float = float("inf")) -> float | None:
        """The most the memory's similarity falls with one of the question's words left out (all of
        it when nothing is left, or the rest could not be embedded), or the first drop of at least
        `enough` (the words are embedded as far as needed); None when no word could be left out, or
        the memory has no vector."""
        at = self._matrix.row_of(memory_id)
        if at is None:
            return None
        if self._texts is None:
            self._texts = without_each(self._raw, self._labels)
        vector = self._matrix.vectors[at]
        whole = float(vector @ self._question)
        most: float | None = None
        for n, text in enumerate(self._texts):
            if n == len(self._without):
                self._without.append(self._embed(text) if text.strip() else None)
            left = self._without[n]
            fallen = whole - (0.0 if left is None else float(vector @ left))
            most = fallen if most is None else max(most, fallen)
            if most >= enough:
                break
        return most
