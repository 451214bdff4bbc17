"""The key of a memory stored without one: derived from its content by the server, one derivation
for every door (SPEC §1: REST, batches, hooks and MCP `remember` all come through `model.MemoryWrite`).

A derived key is the content's first meaningful words, readable in a list, and a short digest of the
whole text, so two notes that start alike stay two. The same text (case and spacing aside) gives the
same key, so storing it twice replaces one memory instead of keeping two. A memory records that its
key was derived (`Memory.key_derived`): recall then leaves the key out, since it says nothing the
content does not.
"""

import hashlib
import re
import unicodedata

KEY_DIGEST_CHARS = 6
KEY_WORDS = 5
KEY_WORD_CHARS = 20
# Words that say little in a key.
_KEY_STOPWORDS_TEXT = """
a an the and or but of to in on at for with from by is are was were be been am i my me he him his she her
they them their it its we our you your this that these those has have had do does did not so as than
then there here will would can could should just very also about into
"""
KEY_STOPWORDS = frozenset(_KEY_STOPWORDS_TEXT.split())
_WORD = r"[a-z0-9]+"  # compiled on first use (by `re`'s cache), not at every handler's cold start
_HEX = frozenset("0123456789abcdef")


def derived_key(category: str, content: str) -> str:
    """The key of `content` stored without one: e.g. "Walks to work" → `walks_work_cf7811`; a text
    without a word in a-z or 0-9 is named by its category (`note_1a2b3c`)."""
    normalized = " ".join(content.split()).casefold()
    digest = hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_DIGEST_CHARS]
    plain = unicodedata.normalize("NFKD", normalized).encode("ascii", "ignore").decode()
    words = [word[:KEY_WORD_CHARS] for word in re.findall(_WORD, plain) if word not in KEY_STOPWORDS]
    return f"{'_'.join(words[:KEY_WORDS]) or category}_{digest}"


def is_derived(category: str, key: str, content: str) -> bool:
    """Whether `key` is what `derived_key` makes of `content` (a client that derived it on its own,
    as clients did before the server did, or a memory stored before the server recorded it)."""
    ends_in_digest = key[-KEY_DIGEST_CHARS - 1 : -KEY_DIGEST_CHARS] == "_" and _HEX.issuperset(
        key[-KEY_DIGEST_CHARS:]
    )
    return ends_in_digest and key == derived_key(category, content)
