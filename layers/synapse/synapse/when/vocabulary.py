"""The words of time the grammar reads (English): months, weekdays, numbers written out, the words
that put a sentence in the past, and the pattern fragments the rules are written with. Apart from
`grammar` so its rules read in one sitting."""

import re
from enum import Enum


class Tense(Enum):
    PAST = "past"
    FUTURE = "future"


MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
# Month names that are also everyday words or names: a month only with a day, a year or a
# preposition ("in May", "May 5"), never alone ("may", "march", "june", "august").
WORDLIKE_MONTHS = frozenset({"may", "march", "june", "august"})
WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3,
    "a couple of": 2, "couple of": 2, "several": 3,
}  # fmt: skip

MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
FULL_MONTH = "|".join(
    m for m in sorted(MONTHS, key=len, reverse=True) if len(m) > 4 or m in {"may", "june", "july"}
)
WEEKDAY = "|".join(WEEKDAYS)
NUMBER = r"\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
UNIT = r"(day|week|fortnight|month|year)s?"
ORDINAL = r"(?:st|nd|rd|th)?"
RANGE_TO = r"\s*(?:[-\u2013\u2014]|to|until|till)\s*"  # hyphen, en or em dash, or words
WORD_START = r"(?<![\w-])"  # a word starts here
WORD_END = r"(?![\w])"  # a word ends here


def number(text: str) -> int:
    text = " ".join(text.split())
    return int(text) if text.isdigit() else NUMBERS[text]


_PAST_WORDS = re.compile(
    r"\b(did|was|were|had|went|happened|ago|last|yesterday|past|previously|earlier|used to|said|told"
    r"|met|visited|discussed|mentioned|bought|moved|talked|spoke|asked|wrote|sent"
    r"|spent|celebrated|enjoyed|attended|hosted|stayed|ate|watched|flew|drove|saw)\b"
)


def tense_of(lowered: str) -> Tense:
    """A sentence's tense, guessed from its past-tense words (else the future: plans and due dates)."""
    return Tense.PAST if _PAST_WORDS.search(lowered) else Tense.FUTURE


# A memory that tells what happened, in the past tense, and names no day of its own is about the day
# it was written ("Got my flu jab at the health centre", stored that afternoon); one that states a
# fact ("Lives in Porto", "Allergic to penicillin") is about no day. Wider than a question's past
# words above: every regular past form (not "need", "speed", "bed") and the common irregular ones,
# where a question's "booked" or "planned" ("What's booked for Friday?") must not make it past.
_TOLD_PAST = re.compile(
    r"\b(?:[a-z]{2,}[^\We]ed|got|came|went|ran|took|made|did|had|was|were|saw|bought|brought|felt"
    r"|found|gave|left|lost|met|paid|said|sent|slept|spoke|spent|told|won|wrote|began|broke|caught"
    r"|drank|drove|ate|fell|flew|forgot|grew|kept|knew|rode|sang|sold|swam|taught|threw|woke)\b"
)


def tells_past(lowered: str) -> bool:
    """Whether a memory's text tells, in the past tense, something that happened."""
    return _TOLD_PAST.search(lowered) is not None
