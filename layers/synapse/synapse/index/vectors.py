"""Each memory's meaning as a vector, kept in the mind's index generation beside its FTS5 rows.

`vectors(rowid, memory_id, version, text_hash, vector)`: one row per live memory under its docs
rowid, the float16 embedding of its key (underscores as spaces), content and tags. Rows are written
by the index writer in the batch's own transaction, version-gated like the docs (a replayed older
image never brings back an old vector) and deleted with the memory. `text_hash` names the embedded
text, so a change that leaves the text alone (priority, expiry) reuses the vector instead of
embedding again, and a rebuild carries the unchanged ones over.

What a batch writes costs the pages of its own rows (index schema 6): keyed by the docs rowid, a
memory's vector row sits where its docs row does (a new memory's at the end), no index of the table
is written, and the batch's rowids go in one row appended to `vector_batches`, from which a reader
brings its matrix up to date (`matrices.refreshed`). Schema 5 keyed the rows by memory id with
indexes by text and by batch and a counter in `meta`: six more pages per change, each a 4 kB frame
of the log (docs/scaling.md, "Search index bytes").

The model is `synapse.embedding.default_embedder()` (imported when first needed: the functions that
never embed do not load it). A generation from before vectors gets its table from the next batch
that writes its mind, and its missing vectors a bounded number per batch (`fill`), so an existing
index upgrades by itself and answers meanwhile, lexically for what has no vector yet.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from synapse import embedding
from synapse.core import observability
from synapse.core.observability import logger, metrics
from synapse.index import ahead, vector_rows
from synapse.index.matrices import DIMS, Matrix, load, matrix_of, refreshed
from synapse.index.vector_rows import has_table

# Cosine of two memories' embedded texts from which they say nearly the same: a write answers with
# such memories (`repeats`), and of two such hits the newer ranks first (`fusion`). Chosen on
# labelled pairs (bench/similar.py, docs/search.md): precision 0.97, recall 0.97 of 32 restated or
# updated facts; one of 40 pairs of distinct facts of one person reaches it (0.635).
REPEAT_SIMILARITY = 0.6
# Missing vectors embedded per batch (an upgraded index, a rebuild's leftovers): ~2.5 s of one CPU.
FILL_PER_BATCH = 256
_META_MODEL = "vectors_model"
_META_COMPLETE = "vectors_complete"


class Embedder(Protocol):
    """What the index needs of a model (`synapse.embedding.Embedder`): unit-length float32 rows."""

    def embed(self, texts: Sequence[str]) -> Any: ...


# Metrics of a model that failed (`model_failed`): a write answered without `similar`, vectors an
# indexed batch published without, a search answered by words alone.
SIMILAR_UNAVAILABLE = "SimilarUnavailable"
INDEX_VECTORS_DEFERRED = "IndexVectorsDeferred"
SEARCH_LEXICAL_FALLBACK = "SearchLexicalFallback"


def model_failed(metric: str, error: BaseException, count: int = 1, **about: str) -> None:
    """A model failure, told once where it degrades: a warning naming it and a metric of how many."""
    logger.warning(
        "degraded by a model failure (nothing lost): %s",
        metric,
        extra={"degraded": metric, "error": f"{type(error).__name__}: {error}"[:500], "count": count} | about,
    )
    metrics.add_metric(name=metric, unit=observability.COUNT, value=count)


__all__ = ["DIMS", "Matrix", "has_table", "load", "matrix_of", "refreshed"]  # read through here too

_override: list[Embedder] = []
_missing_logged: list[bool] = []


def use_embedder(model: Embedder | None) -> None:
    """Replace the model (tests' deterministic fake; None: back to the shipped one)."""
    _override[:] = [model] if model is not None else []


def embedder() -> Embedder | None:
    """The model, loaded on first use; None when this build has none (then nothing is embedded).
    A model file that is not the pinned one raises (`ModelIntegrityError`): that must be loud."""
    if _override:
        return _override[0]
    try:
        found: Embedder = embedding.default_embedder()
    except embedding.ModelUnavailable:
        if not _missing_logged:
            _missing_logged.append(True)
            logger.warning("no embedding model in this build: search is lexical only")
        return None
    return found


def question_vector(text: str) -> Any:
    """The query's vector (the shipped model caches repeated questions), or None without a model, or
    when the questions' model cannot load (damaged, unreadable): the search is then lexical, not a 500."""
    try:
        model = embedder()
        if model is None:
            return None
        if _override:
            return model.embed([text])[0]
        return embedding.embed_query(text)
    except embedding.EmbeddingError as error:
        model_failed(SEARCH_LEXICAL_FALLBACK, error)
        return None


def serves(text: str) -> bool:
    """Whether the model reads text's language (English): for another, its vector is near noise."""
    return embedding.serves(text)


def model_name(model: Embedder) -> str:
    """Vectors of another model are not comparable: a generation records whose they are."""
    return str(getattr(model, "name", None) or getattr(model, "model_id", None) or type(model).__name__)


# A key derived from the content (MCP `remember` without a key: `<category>_<16 hex digits>`, or
# words of the content and a short digest, `walks_work_cf7811`) adds nothing to the content but its
# digest, which would be noise (and would make such notes a little alike): the digest is left out,
# and a key whose every word the content already says (a derived key's are its first words), whole:
# said twice, those words would outweigh the rest of the content.
_DIGEST = re.compile(r"_(?=[0-9a-f]*[0-9])[0-9a-f]{6,16}$")
_CATEGORIES = frozenset({"identity", "preference", "fact", "project", "skill", "mistake", "context", "note"})


def embedded_text(key: str, content: str, tags: str) -> str:
    """What is embedded: the key as words, the content, the tags (as the index holds them, joined)."""
    words = _DIGEST.sub("", key)
    said = set(re.findall(r"[a-z0-9]+", content.casefold()))
    redundant = words in _CATEGORIES or not words or set(words.split("_")) <= said
    parts = [content] if redundant else [words.replace("_", " "), content]
    if tags:
        parts.append(tags)
    return "\n".join(parts)


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


class Pending(NamedTuple):
    """A memory whose applied version needs its vector."""

    memory_id: str
    version: int
    text: str


def create_table(db: sqlite3.Connection) -> None:
    vector_rows.create(db)


def remove(db: sqlite3.Connection, rowid: int) -> None:
    """A removed memory's vector (at its docs `rowid`) goes with it (the docs tombstone guards
    against replays)."""
    vector_rows.remove(db, rowid)


def _meta(db: sqlite3.Connection, name: str) -> str | None:
    found = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return None if found is None else str(found[0])


def _set_meta(db: sqlite3.Connection, name: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))


def prepare(db: sqlite3.Connection, model: Embedder) -> None:
    """The table exists and holds this model's vectors (another model's are dropped, to re-embed)."""
    create_table(db)
    name = model_name(model)
    if _meta(db, _META_MODEL) != name:
        db.execute("DELETE FROM vectors")
        vector_rows.note_reset(db)  # a reader's matrix of the other model is read again whole
        _set_meta(db, _META_MODEL, name)
        _set_meta(db, _META_COMPLETE, "0")


# Vectors embedded a moment ago in this process, by model and text: a write's `similar` and the
# indexer of the same process (the local runner) embed each text once, whichever comes first, and a
# retried write reuses it. Bounded: ~1.5 kB a vector. Texts being embedded right now are noted
# (`_embedding`): the other waits for their vectors rather than embed them again.
RECENT_VECTORS = 4096
# How long one waits for another's vectors of its texts: more than a batch of 100 takes.
WAIT_FOR_WRITE_SECONDS = 10.0
_recent: OrderedDict[tuple[str, str], Any] = OrderedDict()
_embedding: dict[tuple[str, str], threading.Event] = {}
_recent_lock = threading.Lock()


def recently_embedded(model: Embedder, text: str) -> Any | None:
    """text's vector if this process embedded it a moment ago."""
    with _recent_lock:
        return _recent.get((model_name(model), text))


def embedded_once(model: Embedder, texts: Sequence[str], wait: float = WAIT_FOR_WRITE_SECONDS) -> Any:
    """The texts' vectors, (len(texts), DIMS) float32, each text embedded once in this process
    whoever asks first (a write's `similar`, the indexer's batch): those embedded a moment ago come
    from the cache, those another thread is embedding now are waited for (up to `wait` seconds),
    the rest are embedded in one call, and kept."""
    import numpy as np

    name = model_name(model)
    with _recent_lock:
        known = {text: _recent.get((name, text)) for text in texts}
        missing = sorted({text for text, vector in known.items() if vector is None})
        done = threading.Event()
        running = {text: _embedding.setdefault((name, text), done) for text in missing}
    mine = [text for text in missing if running[text] is done]
    try:
        _embed_into(model, name, mine, known)
    finally:
        with _recent_lock:
            for text in mine:
                _embedding.pop((name, text), None)
        done.set()
    theirs = [text for text in missing if running[text] is not done]
    deadline = time.monotonic() + wait
    for text in theirs:
        if running[text].wait(max(0.0, deadline - time.monotonic())):
            with _recent_lock:
                known[text] = _recent.get((name, text))
    _embed_into(model, name, [text for text in theirs if known[text] is None], known)  # theirs failed
    if not texts:
        return np.zeros((0, DIMS), dtype=np.float32)
    return np.stack([known[text] for text in texts])  # type: ignore[misc] # every text is known now


def _embed_into(model: Embedder, name: str, texts: list[str], known: dict[str, Any]) -> None:
    """Embed `texts` in one call into `known` and the process's cache."""
    import numpy as np

    if not texts:
        return
    fresh = np.asarray(model.embed(texts), dtype=np.float32)
    with _recent_lock:
        for text, vector in zip(texts, fresh, strict=True):
            known[text] = _recent[(name, text)] = vector
        while len(_recent) > RECENT_VECTORS:
            _recent.popitem(last=False)


class _Once:
    """A model whose texts go through `embedded_once`: what the indexer embeds ahead is kept for a
    write of the same text, and a text a write is embedding is waited for, not embedded again."""

    def __init__(self, model: Embedder) -> None:
        self.model = model

    def embed(self, texts: Sequence[str]) -> Any:
        return embedded_once(self.model, texts)


def _pack(vector: Any) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float16).tobytes()


_ahead: list[ahead.Ahead] = []  # the stream batch's (`embedded_ahead`)


@contextlib.contextmanager
def embedded_ahead(texts: Sequence[str]) -> Iterator[None]:
    """Embed `texts` on a thread, in their order, while the batch runs; each mind's `write` takes
    its vectors from there (waiting for them if need be) instead of embedding them itself. A text
    this process embedded a moment ago (a write's `similar`, in the local runner) is not embedded
    again."""
    wanted = {text_hash(t): t for t in texts}
    try:
        model = embedder() if wanted else None
    except Exception:  # each mind then embeds its own (and fails on its own, if it must)
        logger.exception("embedding a stream batch ahead failed")
        model = None
    if model is None:
        yield
        return
    ready = {}
    for digest, text in wanted.items():
        vector = recently_embedded(model, text)
        if vector is not None:
            ready[digest] = vector
    # The rest on the Ahead thread, which waits there for those a write is embedding right now.
    running = ahead.Ahead(_Once(model), [(d, t) for d, t in wanted.items() if d not in ready], ready)
    _ahead.append(running)
    try:
        yield
    finally:
        _ahead.remove(running)
        running.close()


def _embedded_ahead(digest: bytes) -> Any | None:
    for running in _ahead:
        found = running.take(digest)
        if found is not None:
            return found
    return None


def write(db: sqlite3.Connection, model: Embedder, pending: Iterable[Pending]) -> int:
    """Store the vectors of `pending` (changes applied in this transaction): the memory's own vector
    is kept when its text is unchanged, one the stream batch embedded ahead is taken (waiting for it
    if need be), the rest embedded in one call; the batch's rowids go to `vector_batches`. Returns
    how many were embedded. Only versions the docs table still holds are written (a later removal
    wins)."""
    wanted: list[tuple[Pending, int, bytes]] = []
    rows: list[vector_rows.Row] = []
    for item in pending:
        live = db.execute(
            "SELECT rowid, version FROM docs WHERE id = ? AND deleted = 0", (item.memory_id,)
        ).fetchone()
        if live is None or live[1] != item.version:
            continue
        digest = text_hash(item.text)
        own = vector_rows.own_vector(db, live[0])
        if own is not None and own[0] == digest:
            rows.append(vector_rows.Row(live[0], item.memory_id, item.version, digest, own[1]))
        else:
            wanted.append((item, live[0], digest))
    ready = 0
    if _ahead:
        waiting, wanted = wanted, []
        for item, rowid, digest in waiting:
            vector = _embedded_ahead(digest)
            if vector is None:
                wanted.append((item, rowid, digest))
            else:
                rows.append(vector_rows.Row(rowid, item.memory_id, item.version, digest, _pack(vector)))
                ready += 1
    if wanted:
        embedded = model.embed([item.text for item, _, _ in wanted])
        rows += [
            vector_rows.Row(rowid, item.memory_id, item.version, digest, _pack(vector))
            for (item, rowid, digest), vector in zip(wanted, embedded, strict=True)
        ]
    vector_rows.put(db, rows)
    vector_rows.note_batch(db, [row.rowid for row in rows])
    return len(wanted) + ready


def mark_incomplete(db: sqlite3.Connection) -> None:
    """The generation lacks vectors (a model failure): `fill` looks for them again."""
    _set_meta(db, _META_COMPLETE, "0")


def is_complete(db: sqlite3.Connection) -> bool:
    return _meta(db, _META_COMPLETE) == "1"


def fill(db: sqlite3.Connection, model: Embedder, budget: int = FILL_PER_BATCH) -> int:
    """Embed up to `budget` live memories that have no vector of their version yet (an index from
    before vectors, a rebuild's leftovers); once none is left the generation says so, and later
    batches skip the look. Returns how many were written."""
    if _meta(db, _META_COMPLETE) == "1":
        return 0
    found = db.execute(vector_rows.MISSING_SQL, (budget + 1,)).fetchall()
    pending = [
        Pending(i, version, embedded_text(key, content, tags))
        for i, version, key, content, tags in found[:budget]
    ]
    written = write(db, model, pending)
    if len(found) <= budget:
        _set_meta(db, _META_COMPLETE, "1")
    return written


def carry(db: sqlite3.Connection, source: str) -> int:
    """Copy into `db` the vectors of attached database `source` (a previous generation, of either
    layout) whose text is what a live doc of `db` embeds now: a rebuild re-embeds only what changed."""
    known = vector_rows.source_hashes(db, source)
    if not known:
        return 0
    rows = db.execute(
        "SELECT d.rowid, d.id, d.version, d.key, coalesce(f.raw_content, f.content),"
        " coalesce(f.raw_tags, f.tags) FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0"
    ).fetchall()
    found = []
    for rowid, memory_id, version, key, content, tags in rows:
        digest = text_hash(embedded_text(key, content, tags))
        at = known.get(digest)
        if at is not None:
            vector = vector_rows.source_vector(db, source, at)
            found.append(vector_rows.Row(rowid, memory_id, version, digest, vector))
    vector_rows.put(db, found)
    return len(found)
