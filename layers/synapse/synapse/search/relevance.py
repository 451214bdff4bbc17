"""Whether a search hit answers the question (`strong`: an answer an agent may act on) or is related at
best (`weak`): an agent answers from the strong hits and, when there is none, says it does not know.

Two ways to be strong, calibrated on the tune halves of bench/questions.py --meaning-only's sets and
bench/data/unanswerable.json (docs/search.md, "Measured relevance"):

- a fused score of at least STRONG_SCORE (for a memory found by meaning alone: a similarity of about
  0.29 and more, as far as the question's words leave it open);
- a lexical hit backed by meaning (similarity at least `fusion.SUPPORTED_AT`, where its shared words
  count in full) scoring within STRONG_MARGIN of the ranking's best hit. Answers that share part of
  the question's words score under STRONG_SCORE (coverage counts squared): "What surgery did
  Oliver's dad have?" / "...my dad had his knee replaced on Monday" holds half of its words, at
  0.59 in meaning.
  The no-answer questions' lexical hits share a word in another sense ("Does he play tennis?" /
  "Plays the guitar", 0.38): under SUPPORTED_AT. The margin keeps the other turns on the topic,
  further down, from being called answers too.

Both read the hit and the ranking's best score only, so a hit is as strong on every page.
"""

STRONG_SCORE = 0.46
STRONG_MARGIN = 0.1
STRONG = "strong"
WEAK = "weak"


def band(score: float, best: float = 0.0, backed_words: bool = False) -> str:
    """`strong` or `weak` for a hit scoring `score` in a ranking whose first hit scores `best`;
    `backed_words`: the hit shares words with the question and is close to it in meaning."""
    if score >= STRONG_SCORE or (backed_words and score >= best - STRONG_MARGIN):
        return STRONG
    return WEAK
