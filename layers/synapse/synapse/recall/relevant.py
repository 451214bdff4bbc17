"""The memories of a recall's selection most relevant to its `q` (the user's message or the task).

Found by best-match search over the mind's index (hybrid: words and meaning), so they come as search
ranks them (a time expression in `q` favours the memories dated in its window, as in search). A hit
covering less than half of what the best hit covers, not close in meaning either (similarity under
RELEVANT_SIMILARITY) and not dated in the message's time window, is left to recall's usual order:
a long message shares a word with many memories, and only the strong matches should jump ahead of
the mind's priorities.
"""

from __future__ import annotations

from synapse.core.errors import BadRequest
from synapse.memory.kinds import Memory
from synapse.recall.query import RecallQuery
from synapse.search.filters import SearchFilters

MAX_RELEVANT = 10
RELEVANT_SIMILARITY = 0.5  # a memory this close in meaning is relevant, whatever words it shares


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
    if not hits:
        return []
    best = max(r.coverage for r in hits)
    return [
        r.memory
        for r in hits
        if (r.coverage > 0 and r.coverage >= best / 2)
        or (r.similarity or 0.0) >= RELEVANT_SIMILARITY
        or r.dated  # in the window the message names ("what's on next week?")
    ][:MAX_RELEVANT]
