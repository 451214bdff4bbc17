"""The memories of a recall's selection most relevant to its `q` (the user's message or the task).

Found by the search an agent would run (`search.service`, hybrid: words and meaning), so they come as
search ranks them, with search's floor: what search does not return is not relevant. Its `strong`
hits are relevant (up to MAX_RELEVANT), and so are those dated in the time window `q` names
("what's on next week?"); its `weak` ones only while fewer than MIN_RELEVANT are
placed: a long message shares a word with many memories, and only the strong matches should jump
ahead of the mind's priorities, but a question answered only by a weak match still gets its best.
"""

from __future__ import annotations

from synapse.core.errors import BadRequest
from synapse.memory.kinds import Memory
from synapse.recall.query import RecallQuery
from synapse.search.filters import SearchFilters

MAX_RELEVANT = 10
MIN_RELEVANT = 3  # weak hits fill the relevant memories up to this many


def _searched_part(q: str, max_chars: int) -> str:
    """The start of the message, cut at a word so no half word is searched."""
    if len(q) <= max_chars:
        return q
    cut = q[:max_chars]
    return cut.rsplit(None, 1)[0] if " " in cut.strip() else cut


def relevant_memories(mind_id: str, query: RecallQuery) -> list[Memory]:
    """Up to MAX_RELEVANT memories of the selection, best match first ([] without `q`)."""
    if not query.q:
        return []
    # The search modules (and sqlite3) load with the first recall that has a `q`: a recall without
    # one, the usual start of a conversation, does without them at cold start (issue 35).
    from synapse.search import service
    from synapse.search.fusion import STRONG
    from synapse.search.query import MAX_QUERY_CHARS

    one_category = next(iter(query.categories)) if query.categories and len(query.categories) == 1 else None
    filters = SearchFilters(tag=query.tag, category=one_category, window=query.window)
    wanted = MAX_RELEVANT if one_category or not query.categories else 3 * MAX_RELEVANT
    try:
        searched = _searched_part(query.q, MAX_QUERY_CHARS)
        page = service.search(mind_id, searched, filters, wanted, now=query.now, zone=query.zone)
    except BadRequest:
        return []  # nothing searchable in the message (punctuation, emoji): recall as without it
    hits = [r for r in page.results if not query.categories or r.memory.category in query.categories]
    chosen = [r for r in hits if r.relevance == STRONG or r.dated][:MAX_RELEVANT]
    weak = [r for r in hits if r not in chosen][: max(0, MIN_RELEVANT - len(chosen))]
    placed = {r.memory.id for r in chosen + weak}
    return [r.memory for r in hits if r.memory.id in placed]
