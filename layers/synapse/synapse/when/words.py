"""Whether a text may name a time: the cheap check before the grammar loads (`grammar` compiles
its patterns at import, a cost search's cold start does without).

Every rule of the grammar needs one of these in the text it reads: a digit; a month's first three
letters; "day" (a weekday, "today", "yesterday", "days"); "week", "month" or "year"; "tomorrow";
"morning", "afternoon", "evening" or "night" ("tonight", "last night"); a word of the vague
rules: "recent", "lately", "coming" ("upcoming", "coming up"), "soon", "future"; a season, a
holiday's word ("christmas", "eve", "easter", …) or "fortnight". A text without any
names no time and the grammar need not read it; one with them is read by the grammar, which decides
("What may he eat?" loads it and reads no time). Substrings, ignoring case as the grammar lowers its
text: looser than the grammar, never stricter (tests/unit/test_time_words.py holds it to the grammar
on generated texts).
"""

import re

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_OTHERS = ("day", "week", "month", "year", "night", "tomorrow", "morning", "afternoon", "evening")
_VAGUE = ("recent", "lately", "coming", "soon", "future")
_NAMED = (
    *("spring", "summer", "autumn", "fall", "winter", "fortnight"),
    *("christmas", "xmas", "eve", "halloween", "valentine", "patrick", "easter", "thanksgiving"),
)
_MAY_NAME_TIME = re.compile(r"\d|" + "|".join((*_MONTHS, *_OTHERS, *_VAGUE, *_NAMED)), re.IGNORECASE)


def may_name_time(text: str) -> bool:
    """False when `text` surely names no time the grammar reads; True when it may."""
    return _MAY_NAME_TIME.search(text) is not None
