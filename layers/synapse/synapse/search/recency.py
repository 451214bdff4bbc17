"""Of two hits about the same subject, the newer first (issues 41, 42), applied by
`after_fusion` to a query's one ranking (never to a page, so that pages still add up):

- of two near-duplicates that match a question alike, the more recently updated takes the better
  place (`newer_first`);
- without any `supersedes`, a fact and its newer value ("Works at Acme" / weeks later "Now works at
  Globex as a manager", only 0.40 alike) can both be found: the newer is placed right above the
  older (`newer_values_first`) when, among the first NEWER_VALUE_POOL hits, the two are each
  other's most related hit (`relations.pair_score`: cosine with shared key and subject words, at
  least NEWER_VALUE_SCORE), the newer was true from later (`occurred_at`, else `created_at`), and
  it says it is a new value (`relations.says_update`).
"""

import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from synapse.index import vectors
from synapse.index.schema import has_event_times
from synapse.index.vectors import Matrix
from synapse.search import relations
from synapse.search.candidates import Candidate

# ---------------------------------------------------------------- near-duplicates in a whole ranking
# Of two near-duplicates that match as much of a question, the more recently updated first: applied
# by `after_fusion` to the whole ranking, so that pages still add up.
DUPLICATE_SIMILARITY = vectors.REPEAT_SIMILARITY
# A correction answers the question about as well as the fact it corrects ("which car does he
# drive?": 0.465 to `car` "Drives a 2019 Tesla…", 0.379 to `new_car` "Drives a 2024 BMW i4 now…");
# two turns of one conversation on a topic are near each other too, but the one that answers is
# clearly closer to the question (0.69 against 0.57, 0.75 against 0.48: bench/data/conversation.json).
AS_CLOSE = 0.1
# Each other's best by this much at least: a near tie is no best. Two turns of one conversation
# tie with a third (0.909 / 0.905); the update pairs lead by 0.015 (the least) to 0.76. Of
# near-duplicates, a cluster ("Memory 12 / 16 / 20 about docker deployment", 0.97 to each other)
# has no closest pair but the one float rounding picks, which differs between CPUs. Of a newer
# value (`newer_values`), only the newer's own near tie is settled, by rank ("Down to 85 kg after
# the running programme": 0.579 to "Weighs 92 kg", 0.581 to "Runs 10 km"; the question says which
# it is about), and the hit it settles on must still have it as its clear best.
CLEAR_MARGIN = 0.01


def newer_first(
    ids: list[str],
    updated: list[str],
    matched: list[int],
    similarity: list[float],
    matrix: Matrix | None,
) -> list[int]:
    """The order of a ranking's hits (indexes into `ids`) once, of two near-duplicates (cosine >=
    DUPLICATE_SIMILARITY) that are each other's closest hit, match as many of the query's terms
    (`matched`) and are about as close to the question (`similarity`, AS_CLOSE), the more recently
    updated has taken the better of their two places.

    Each other's closest: a fact and its correction are a pair; the turns of a conversation on one
    topic are a cluster (cosine >= 0.6 for many pairs), in which swapping every near pair carried
    the latest turn above the one that answered, and made the order depend on when turns were
    stored (bench/data/conversation.json: hybrid r@1 0.57 with the turns stored in order, 0.59
    shuffled; 0.60 both ways with closest pairs only, bench/updates.py's newer-above-older 0.88 as
    before)."""
    order = list(range(len(ids)))
    if matrix is None or len(ids) < 2:
        return order
    rows = [matrix.row_of(i) for i in ids]
    present = [i for i, r in enumerate(rows) if r is not None]
    if len(present) < 2:
        return order
    block = matrix.vectors[[rows[i] for i in present]]
    cosines = block @ block.T
    cosines[range(len(present)), range(len(present))] = -1.0  # a hit is not its own closest
    closest = cosines.argmax(axis=1).tolist()
    ahead = _lead(cosines)
    for at, first in enumerate(present):
        partner = closest[at]
        second = present[partner]
        if second <= first or closest[partner] != at or cosines[at, partner] < DUPLICATE_SIMILARITY:
            continue  # counted once, from the better placed of a pair of each other's closest
        if min(ahead[at], ahead[partner]) < CLEAR_MARGIN:
            continue  # one of a cluster: which is closest is the float arithmetic's choice, not the texts'
        same_evidence = (
            matched[first] == matched[second] and similarity[second] >= similarity[first] - AS_CLOSE
        )
        if same_evidence and updated[second] > updated[first]:
            order[first], order[second] = second, first
    return order


def _lead(cosines: Any) -> list[float]:
    """For each row, by how much its closest beats its second closest (a row of two: by all)."""
    if cosines.shape[1] < 3:
        return [1.0] * cosines.shape[0]
    ordered = cosines.copy()
    ordered.sort(axis=1)
    return (ordered[:, -1] - ordered[:, -2]).tolist()  # type: ignore[no-any-return]


# ---------------------------------------------------------------- a newer value of one subject
# The hits looked at: a newer value ranks near the fact it updates (in the first 20: 32 of the 33
# pairs of bench/data/updates.json); its 20 x 20 scores cost ~1.2 ms a search at a load of 15 on 2
# cores (over the bench sets' rankings), plus one statement for the 20 contents.
NEWER_VALUE_POOL = 20
# How related the two must be at least (`relations.pair_score`): the pairs of bench/updates.py are
# 0.41-1.04; chosen on its tune half (0.4 and 0.5 tie there; 0.4 also keeps "Lives at 14 Elm
# Street" / "Moved to 22 Harbour Road", which share no subject word). Being each other's best
# partner among the pool is what keeps a conversation's turns and a person's facts in place.
NEWER_VALUE_SCORE = 0.4


class _Row(Protocol):
    @property
    def rowid(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def key(self) -> str: ...


class Written(NamedTuple):
    """A hit as `newer_values` reads it: its key, what it says, and since when it holds."""

    key: str
    content: str
    since: str  # occurred_at, else created_at, else updated_at (an index from before event times)


_WRITTEN_SQL = (
    "SELECT d.rowid, d.key, coalesce(f.raw_content, f.content), {since} FROM docs d"
    " JOIN fts f ON f.rowid = d.rowid WHERE d.rowid IN ({marks})"
)


def since_sql(db: sqlite3.Connection) -> str:
    """The SQL of `Written.since` over `docs d` (an index from before event times has updated_at only)."""
    return "coalesce(d.occurred_at, d.created_at, d.updated_at)" if has_event_times(db) else "d.updated_at"


def written(db: sqlite3.Connection, rowids: list[int]) -> dict[int, Written]:
    """The hits' keys, contents and times, by docs rowid (one statement)."""
    sql = _WRITTEN_SQL.format(since=since_sql(db), marks=", ".join("?" * len(rowids)))
    return {row[0]: Written(row[1] or "", row[2] or "", row[3] or "") for row in db.execute(sql, rowids)}


def _best(scores: Sequence[float], by_rank: bool = False) -> int | None:
    """The index of the clearly highest score (by CLEAR_MARGIN at least), if one is; `by_rank`: of
    scores that near-tie for the highest, the first (the hits are in rank order: the one the
    question is more about)."""
    ranked = sorted(range(len(scores)), key=lambda b: (-scores[b], b))
    if len(ranked) > 1 and scores[ranked[0]] - scores[ranked[1]] < CLEAR_MARGIN:
        return min(b for b in ranked if scores[ranked[0]] - scores[b] < CLEAR_MARGIN) if by_rank else None
    return ranked[0] if ranked else None


def newer_values(hits: Sequence[Written], cosines: Sequence[Sequence[float]]) -> dict[int, int]:
    """{newer: older} over `hits` (in rank order, `cosines` their pairwise cosines): the pairs that
    are clearly each other's most related hit, at least NEWER_VALUE_SCORE, of which the later one
    says it is a new value. A hit is in one pair at most (each has one clearly best at most).

    Only a hit that could say it is a new value (`relations.may_say_update`) can be the newer of a
    pair, so only its scores and its best match's are weighed (most searches weigh none)."""
    sayers = [a for a, hit in enumerate(hits) if relations.may_say_update(hit.content)]
    if not sayers:
        return {}
    subjects = [relations.subject_of(h.key, h.content) for h in hits]
    rows: dict[int, list[float]] = {}

    def best_of(a: int, by_rank: bool = False) -> int | None:
        if a not in rows:
            rows[a] = [
                relations.pair_score(subjects[a], subjects[b], cosines[a][b]) if a != b else float("-inf")
                for b in range(len(hits))
            ]
        return _best(rows[a], by_rank)

    pairs: dict[int, int] = {}
    for newer in sayers:
        older = best_of(newer, by_rank=True)
        if older is None or best_of(older) != newer:
            continue
        a, b = min(newer, older), max(newer, older)
        if rows[a][b] < NEWER_VALUE_SCORE or not hits[older].since < hits[newer].since:
            continue
        if relations.says_update(hits[newer].content, subjects[older].words):
            pairs[newer] = older
    return pairs


def newer_values_first(
    db: sqlite3.Connection, rows: Sequence[_Row], matrix: Matrix
) -> tuple[list[int], dict[int, int]]:
    """The order of a ranking's hits (indexes into `rows`) once each newer value (`newer_values`,
    among the first NEWER_VALUE_POOL with a vector) is placed right above the older one it updates,
    when that ranked above it; and {newer: older} for the newer ones moved."""
    order = list(range(len(rows)))
    pool = [at for at in order[:NEWER_VALUE_POOL] if matrix.row_of(rows[at].id) is not None]
    if len(pool) < 2:
        return order, {}
    found = written(db, [rows[at].rowid for at in pool])
    pool = [at for at in pool if rows[at].rowid in found]
    block = matrix.vectors[[matrix.row_of(rows[at].id) for at in pool]]
    pairs = newer_values([found[rows[at].rowid] for at in pool], (block @ block.T).tolist())
    moved = {pool[newer]: pool[older] for newer, older in pairs.items() if older < newer}
    if not moved:
        return order, {}
    above = {older: newer for newer, older in moved.items()}
    placed = []
    for at in order:
        if at in moved:
            continue
        if at in above:
            placed.append(above[at])
        placed.append(at)
    return placed, moved


def after_fusion(ranked: list[Candidate], matrix: Matrix | None, db: sqlite3.Connection) -> list[Candidate]:
    """The one place for adjustments made after the fusion, to the whole ranking (never to a page,
    so that pages still add up): of two near-duplicates, the newer first (`recency.newer_first`); a
    newer value right above the older one it updates, with its score at least (`newer_values_first`)."""
    order = newer_first(
        [c.row.id for c in ranked],
        [c.row.updated_at for c in ranked],
        [c.row.mask.bit_count() for c in ranked],
        [c.similarity or 0.0 for c in ranked],
        matrix,
    )
    ranked = [ranked[i] for i in order]
    if matrix is None:
        return ranked
    order, moved = newer_values_first(db, [c.row for c in ranked], matrix)
    lifted = {i: ranked[i]._replace(fused=max(ranked[i].fused, ranked[o].fused)) for i, o in moved.items()}
    return [lifted.get(i, ranked[i]) for i in order]
