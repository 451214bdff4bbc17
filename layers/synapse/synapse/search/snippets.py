"""A hit's snippet: the content's words around what matched, the hits marked.

FTS5's `snippet(table, -1, …)` cuts from whichever column holds the most hits, and on a tie the
first, the key: a note whose key was derived from its first words showed
`**works**_standing_desk_spare_bedroom_8e8569` instead of its text. So each row's content, tags and
key are cut apart (one SQL value, `COLUMN_BREAK` between them) and the snippet is the first that
holds a hit: the content's, else the tags', else the key's; with none (a row matched otherwise), the
start of the content.
"""

from synapse.index.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN

SNIPPET_TOKENS = 16
# Between the columns' snippets: a control character, which `folding.fold` turns into a space, so
# indexed text never holds it (as the marks).
COLUMN_BREAK = "\x05"
# The columns of `fts` and `fts_exact` (key, content, tags) in the order a snippet prefers them.
_PREFERRED = (1, 2, 0)


def snippets_sql(table: str) -> str:
    """The SQL value of a matched row's snippets in `table`: content's, tags', key's, joined."""
    marks = f"char({ord(MARK_OPEN)}), char({ord(MARK_CLOSE)}), char({ord(ELLIPSIS)}), {SNIPPET_TOKENS}"
    cuts = [f"snippet({table}, {column}, {marks})" for column in _PREFERRED]
    return f" || char({ord(COLUMN_BREAK)}) || ".join(cuts)


def chosen(cut: str | None) -> str:
    """The snippet of a row's `snippets_sql` value: the first column's that marks a hit."""
    if not cut:
        return ""
    columns = cut.split(COLUMN_BREAK)
    return next((column for column in columns if MARK_OPEN in column), columns[0])
