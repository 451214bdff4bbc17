"""Which texts the model understands: all-MiniLM-L6-v2 was trained on English text only.

`serves(text)` is the cheap guard the hybrid ranking uses to keep a query in another language on
lexical search alone (for such a query MiniLM's vector is close to noise, and fusing noise could only
push lexical hits down). A text is served when its letters are mostly unaccented Latin and it holds
none of the commonest function words of German, French, Spanish, Italian, Portuguese or Dutch, or
more English function words than those. On bench/data/questions.json it agrees with search's own
language detection on all 257 questions (207 English served; 23 German and 27 Russian not).
Texts with no letters at all (numbers, symbols) are not served: there is no meaning to match.
"""

from __future__ import annotations

import re

# A share of non-ASCII letters above this means another script or a language written with accents;
# English with a borrowed name ("Müller", "café") stays well below it.
MAX_FOREIGN_LETTER_SHARE = 0.15
_WORD = re.compile(r"[^\W\d_]+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ENGLISH = _words(
    """a an the is are was were be been am do does did have has had of to in on at for with from by
    and or but not no what who whom whose which when where why how this that these those he she it
    they we you i his her its their our your my me him them us there here will would can could should
    any some all about after before than then so if as"""
)
# Frequent function words of the Latin-script languages people most often write to an agent in,
# only those that are not also English words (so "die", "hat", "van", "dove", "per" and
# "comment" stay English).
_OTHER = _words(
    """und ist der das nicht ich er sie wer wen wem wo wie sein seine ein eine einen auf mein meine
    welche welcher welches wann warum sind wir ihr ihre dem oder aber auch noch schon zum zur vom
    unser unsere unseren euer eure bei nach kann muss wird werden gibt bitte
    et qui que quel quelle dans avec sont ses ils nous vous pas du ce cette leur pourquoi quand où
    es una por para su tiene esta qué quién dónde cómo cuál cuándo porque pero muy también
    il che della sono suo sua gli nel perché anche è
    uma quem onde seu tem não são ele ela dele dela é
    het een niet wat waar zijn heeft ook maar wij jij"""
)


def serves(text: str) -> bool:
    """Whether the model understands text well enough for its vector to rank by meaning."""
    words = _WORD.findall(text.lower())
    if not words:
        return False
    letters = sum(len(word) for word in words)
    foreign_letters = sum(1 for word in words for ch in word if not ch.isascii())
    if foreign_letters > MAX_FOREIGN_LETTER_SHARE * letters:
        return False
    other = sum(word in _OTHER for word in words)
    english = sum(word in _ENGLISH for word in words)
    return other == 0 or english > other
