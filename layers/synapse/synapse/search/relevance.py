"""Whether a search hit answers the question (`strong`: an answer an agent may act on) or is related at
best (`weak`): an agent answers from the strong hits and, when there is none, says it does not know.

Two ways to be strong, calibrated on the tune halves of bench/questions.py --meaning-only's sets and
bench/data/unanswerable.json (docs/search.md, "Measured relevance"):

- a fused score of at least STRONG_SCORE (a memory found by meaning alone: as the check below says);
- a lexical hit backed by meaning (similarity at least `fusion.SUPPORTED_AT`, where its shared words
  count in full) scoring within STRONG_MARGIN of the ranking's best hit. Answers that share part of
  the question's words score under STRONG_SCORE (coverage counts squared): "What surgery did
  Oliver's dad have?" / "...my dad had his knee replaced on Monday" holds half of its words, at
  0.59 in meaning.
  The no-answer questions' lexical hits share a word in another sense ("Does he play tennis?" /
  "Plays the guitar", 0.38): under SUPPORTED_AT. The margin keeps the other turns on the topic,
  further down, from being called answers too.

A memory found by meaning alone with a similarity of MEANT_AT or more and a score under SURE_SCORE
is strong only if it depends on what was asked (`depends`): its similarity falls by DEPENDS_AT or
more when one of the question's words is left out. Without that check 11 of the 30 questions with
no answer in the mind (7 of the 15 held out) got a strong hit, a memory close to questions of their
shape whatever they ask ("Does he own a boat?" / "Doesn't drink alcohol", 0.31, as close without
"boat"); the answers it checks on the tune half fall by 0.06-0.37. The check starts from the
similarity, not the score: a lexical hit as close to the question (`fusion`'s closing coverage)
ranks such a memory lower but says nothing of whether it answers ("What's his partner's name?" /
"Wife is Anna, married since 2015": 0.35 in meaning, 0.15 in score, 0.17 less without "partner").
The constants were chosen on the tune half (bench/questions.py --meaning-only; docs/search.md,
"Measured relevance"): MEANT_AT 0.29 (at 0.28 a second no-answer question of the 15 got a strong
hit; at 0.30 fewer answers were strong) and DEPENDS_AT 0.05 (0.04-0.06 alike); SURE_SCORE (a
similarity of about 0.44) is above the best meaning-only hit of any no-answer question (0.39), and
keeps the check, one embedding a word of the question (as far as needed), off the hits that need
none. Only the ranking's first CHECKED_HITS are checked, what an agent reads: further down such a
hit is weak (`unchecked`), so a deep page costs no embedding and calls no hub an answer.

All of it reads the hit, its question and the ranking's best score only, so a hit is as strong on
every page.
"""

STRONG_SCORE = 0.46
STRONG_MARGIN = 0.1
SURE_SCORE = 1.2
MEANT_AT = 0.29
DEPENDS_AT = 0.05
CHECKED_HITS = 5
STRONG = "strong"
WEAK = "weak"


def needs_check(score: float, similarity: float | None, by_meaning_only: bool) -> bool:
    """Whether `band` needs the hit's `depends` drop: found by meaning alone (no word of the
    question), MEANT_AT close to it, but not so close that no question of its shape reaches it."""
    return by_meaning_only and similarity is not None and similarity >= MEANT_AT and score < SURE_SCORE


def unchecked() -> float:
    """The drop of a hit `needs_check` would check, beyond the ranking's first CHECKED_HITS: weak."""
    return float("-inf")


def band(score: float, best: float = 0.0, backed_words: bool = False, drop: float | None = None) -> str:
    """`strong` or `weak` for a hit scoring `score` in a ranking whose first hit scores `best`;
    `backed_words`: the hit shares words with the question and is close to it in meaning; `drop`
    (where `needs_check`): how far its similarity falls when a word of the question is left out."""
    if backed_words and score >= best - STRONG_MARGIN:
        return STRONG
    if drop is not None and score < SURE_SCORE:
        return STRONG if drop >= DEPENDS_AT else WEAK
    return STRONG if score >= STRONG_SCORE else WEAK
