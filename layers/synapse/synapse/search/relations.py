"""What a write's `similar` memories are to it: a `repeat` (says the same) or `related` (the same
subject, perhaps an older value of it: what the write may replace), or nothing worth naming.

The meaning model alone cannot tell: an update says a new value in new words ("Works at Acme" /
"Now works at Globex as a manager" are 0.40 alike), while two facts of one person in the same
words may be unrelated. So a candidate's cosine is weighed with the words the two share: a word
of their keys (the subject an agent named: `coffee` / `coffee_order`) counts most, then the
content's subject words (not function words, not the words an update is said with: now, new,
changed, switched, ...). Only the best such candidate is `related`, and only above `RELATED_SCORE`;
`repeat` needs near-identical meaning. Calibrated on bench/data/updates.json (`bench/updates.py`).

Apart from `repeats` (which finds the candidates and owns how their vectors are read) so the
labelling and the lookup change independently.
"""

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

# Candidates below this cosine are not looked at (`repeats` reads down to it).
CANDIDATE_FLOOR = 0.25
# At or above: says the same (a restatement, not a new value).
REPEAT_SIMILARITY = 0.88
# cosine + KEY_WEIGHT * (keys share a word) + WORD_WEIGHT * min(shared subject words, 2) / 2
KEY_WEIGHT = 0.25
WORD_WEIGHT = 0.2
RELATED_SCORE = 0.5
MAX_RELATED = 1
SHOWN_CHARS = 200

_WORD = re.compile(r"[a-z][a-z']+")  # two letters at least: gp, dr, kg and km name things
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "with",
        "by",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "his",
        "her",
        "their",
        "its",
        "he",
        "she",
        "they",
        "him",
        "them",
        "it",
        "this",
        "that",
        "these",
        "those",
        "my",
        "our",
        "your",
        "i",
        "we",
        "you",
        "me",
        "us",
        "not",
        "no",
        "so",
        "than",
        "then",
        "there",
        "here",
        "into",
        "over",
        "after",
        "before",
        "about",
        "up",
        "down",
        "out",
        "off",
        "again",
        "also",
        "just",
        "only",
        "very",
        "now",
        "new",
        "newer",
        "latest",
        "current",
        "currently",
        "changed",
        "change",
        "changes",
        "switched",
        "switch",
        "moved",
        "move",
        "got",
        "get",
        "gets",
        "went",
        "go",
        "goes",
        "going",
        "became",
        "become",
        "instead",
        "since",
        "anymore",
        "longer",
        "still",
        "today",
        "days",
        "last",
        "next",
        "month",
        "week",
        "year",
        "years",
        "months",
        "weeks",
        "ago",
        "every",
        "each",
        "once",
    ]
)


class Candidate(NamedTuple):
    """A memory a write may replace, as the index holds it."""

    id: str
    key: str
    content: str
    similarity: float


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
                word = word[:-1]  # running -> runn -> run
            return word
    return word


@functools.lru_cache(maxsize=4096)  # a batch weighs each text against a dozen candidates
def subject_words(text: str) -> frozenset[str]:
    """The words that say what a text is about: lowercased, lightly stemmed, function words out."""
    return frozenset(_stem(w) for w in _WORD.findall(text.casefold()) if w not in _STOP)


_DIGEST = re.compile(r"_(?=[0-9a-f]*[0-9])[0-9a-f]{6,16}$")


@functools.lru_cache(maxsize=4096)
def _named_key_words(key: str) -> frozenset[str]:
    """The words of a key an agent chose; none for a key derived from the content
    (`mcp.calls.derived_key`, ending in a digest): its words are the content's, counted already."""
    if _DIGEST.search(key):
        return frozenset()
    return subject_words(key.replace("_", " "))


class Subject(NamedTuple):
    """What a memory is about, as `score` compares it: its named key's words, its subject words."""

    key_words: frozenset[str]
    words: frozenset[str]


# A change of a person's life said by what happened, not by the subject it changes: "Moved to 22
# Harbour Road" is where he lives now, though it shares no word with "Lives at 14 Elm Street"
# (0.41 alike in meaning). Each event lends the words of the subject it changes (in English).
_EVENT_SUBJECTS = (
    (
        re.compile(r"\b(?:moved|moving) (?:to|into|out|house|back to|in with)\b|\brelocat"),
        "lives home address",
    ),
    (
        re.compile(r"\b(?:joined|hired by|started (?:at|a new job|working)|laid off|resigned|retired)\b"),
        "works job",
    ),
    (re.compile(r"\b(?:married|engaged|divorced|separated|broke up|split up)\b"), "partner"),
)


# What a full-text query of the index finds every life event of `_EVENT_SUBJECTS` among (and more:
# `tells_event` keeps those that say one).
EVENT_TERMS = (
    "moved OR moving OR relocated OR relocating OR joined OR hired OR started OR laid OR resigned OR retired"
    " OR married OR engaged OR divorced OR separated OR broke OR split"
)


def tells_event(content: str) -> bool:
    """Whether `content` says a life event that changes a subject (`_EVENT_SUBJECTS`)."""
    return bool(_event_words(content))


@functools.lru_cache(maxsize=4096)
def _event_words(content: str) -> frozenset[str]:
    """The subject words a life event in `content` lends it (none without one)."""
    text = content.casefold()
    return frozenset().union(*(subject_words(lent) for event, lent in _EVENT_SUBJECTS if event.search(text)))


def said_by_event(content: str, about: frozenset[str]) -> bool:
    """Whether `content` changes what a memory with the subject words `about` holds by a life event
    ("Moved to 22 Harbour Road" of "Lives at 14 Elm Street"): words a question about the older one
    asks with, the newer one need not share."""
    return bool(_event_words(content) & about)


def subject_of(key: str, content: str) -> Subject:
    words = subject_words(f"{content} {key.replace('_', ' ')}") | _event_words(content)
    return Subject(_named_key_words(key), words)


def _names(one: Subject, other: Subject) -> bool:
    """Whether `one`'s named key is `other`'s subject: the keys share a word, or `other` says every
    word of a key of two words or more ("Atlas deadline pushed back" names `atlas_deadline`; a key of
    one word said in passing, "…before coffee" of `coffee`, is a shared word, no more)."""
    return bool(one.key_words & other.key_words) or (len(one.key_words) > 1 and one.key_words <= other.words)


def pair_score(one: Subject, other: Subject, similarity: float) -> float:
    """How strongly two memories look like the same subject: their cosine, with the words they share."""
    keys_share = _names(one, other) or _names(other, one)
    shared = len(one.words & other.words)
    return similarity + KEY_WEIGHT * keys_share + WORD_WEIGHT * min(shared, 2) / 2


def score(key: str, content: str, candidate: Candidate) -> float:
    """How strongly `candidate` looks like the same subject as the write (`key`, `content`)."""
    return pair_score(
        subject_of(key, content), subject_of(candidate.key, candidate.content), candidate.similarity
    )


# How a memory says it holds a new value of something: the subject's words are the older value's,
# the change is said with these ("Now works at", "Switched to", "no longer", "Sold the Civic",
# "pushed back to", "went up to"). Not the words of a state ("currently", "still") nor of an event
# that changes no value ("got married", "grew up", "now that", "up to 30 minutes"). Search uses it
# (`recency.newer_values`): of two memories on one subject, the newer is the current value only
# when it says it is one (a conversation's later turn on a topic is not).
_SAYS_UPDATE = re.compile(
    r"\b(?:now(?! that)|nowadays|these days|latest|no longer|anymore|instead|changed"
    r"|switched|swapped|moved|replaced|became|turned out|sold|cancell?ed|dropped|quit|stopped|gave up"
    r"|grew(?! up)|rose|fell|increased|decreased|raised?|went (?:up|down|fully|completely|totally)"
    r"|(?:up|down) from(?= \d)|down to(?= \d)"
    r"|pushed back|postponed|rescheduled|delayed|brought forward|upgraded|downgraded|promoted"
    r"|took over|taken over|relocated|refinanced|remortgaged|renamed|remarried|renewed"
    # a value that holds from a moment on ("since October", "From next sprint stand-up is 10:00"),
    # or an event that sets one ("Started at…", "Joined…", "Bought…", "Registered with…")
    r"|since|as of|from (?:next|now on)"
    r"|started (?:at|as|with|on|a|her|his|my)|joined|bought|signed (?:up|with|the|a)"
    r"|registered (?:with|at)|enrolled|took (?:up|on))\b"
)
# "New mobile number", "New GP:", "a new work laptop": new of what the older one is about (one of
# the next two words); "starting a new thing" updates nothing.
_NEW_OF = re.compile(r"\bnew(?:er)? ([a-z][a-z']+)(?: ([a-z][a-z']+))?")


def may_say_update(content: str) -> bool:
    """Whether `content` could say it is a new value of anything (`says_update` for some subject):
    a search's hits none of which could are left in their order without weighing a pair."""
    text = content.casefold()
    if _SAYS_UPDATE.search(text) is not None:
        return True
    return "new" in text and _NEW_OF.search(text) is not None  # the substring first: a search's hits


def says_update(content: str, about: frozenset[str] = frozenset()) -> bool:
    """Whether `content` says it is a new value (a change, an end to the old one), in English, of
    what a memory with the subject words `about` holds."""
    text = content.casefold()
    if _SAYS_UPDATE.search(text):
        return True
    return any(subject_words(" ".join(w for w in m.groups() if w)) & about for m in _NEW_OF.finditer(text))


def labelled(key: str, content: str, candidates: Sequence[Candidate], limit: int) -> list[dict[str, Any]]:
    """The candidates worth naming, `{id, key, similarity, relation, content}`, most similar first: every
    `repeat`, and the best-scoring `related` ones (at most MAX_RELATED)."""
    named: dict[str, str] = {}
    for candidate in candidates:
        if candidate.similarity >= REPEAT_SIMILARITY:
            named[candidate.id] = "repeat"
    scored = sorted(
        ((score(key, content, c), c) for c in candidates if c.id not in named), key=lambda pair: -pair[0]
    )
    for value, candidate in scored[:MAX_RELATED]:
        if value >= RELATED_SCORE:
            named[candidate.id] = "related"
    shown = [
        {
            "id": c.id,
            "key": c.key,
            "similarity": round(c.similarity, 3),
            "relation": named[c.id],
            "content": shown_text(c.content),
        }
        for c in sorted(candidates, key=lambda c: -c.similarity)
        if c.id in named
    ]
    return shown[:limit]


def shown_text(content: str) -> str:
    """What a write's answer quotes of a memory it names: its first SHOWN_CHARS characters. The
    labels are a guess from meaning and shared words (on sets written blind to them, most writes on a
    neighbouring subject get a `related`: bench/updates.py), so the agent that decides whether to
    pass `supersedes` reads the older memory's words, not its key alone."""
    return content if len(content) <= SHOWN_CHARS else content[: SHOWN_CHARS - 1].rstrip() + "…"
