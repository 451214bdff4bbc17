"""Each memory's meaning as a vector, kept in the mind's index generation beside its FTS5 rows.

`vectors(memory_id, version, text_hash, vector)`: one row per live memory, the float16 embedding of
its key (underscores as spaces), content and tags. Rows are written by the index writer in the
batch's own transaction, version-gated like the docs (a replayed older image never brings back an
old vector) and deleted with the memory. `text_hash` names the embedded text, so a change that
leaves the text alone (priority, expiry) and a rebuild reuse the vector instead of embedding again.

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
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from synapse import embedding
from synapse.core import observability
from synapse.core.observability import logger, metrics
from synapse.search import ahead
from synapse.search.matrices import DIMS, Matrix, has_seq, has_table, load, matrix_of, refreshed

# Cosine of two memories' embedded texts from which they say nearly the same: a write answers with
# such memories (`repeats`), and of two such hits the newer ranks first (`fusion`). Chosen on
# labelled pairs (bench/similar.py, docs/search.md): precision 0.97, recall 0.97 of 32 restated or
# updated facts; one of 40 pairs of distinct facts of one person reaches it (0.635).
REPEAT_SIMILARITY = 0.6
# Missing vectors embedded per batch (an upgraded index, a rebuild's leftovers): ~2.5 s of one CPU.
FILL_PER_BATCH = 256
_META_MODEL = "vectors_model"
_META_COMPLETE = "vectors_complete"
_META_SEQ = "vectors_seq"  # the last batch that wrote vectors (each row keeps its batch's: `seq`)

# Statements run one by one (`executescript` would commit the batch's open transaction).
_VECTOR_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (memory_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " text_hash BLOB NOT NULL, vector BLOB NOT NULL, seq INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS vectors_by_text ON vectors (text_hash)",
)
# A reader that has a generation's matrix reads only the rows written since (`refreshed`).
_SEQ_INDEX = "CREATE INDEX IF NOT EXISTS vectors_by_seq ON vectors (seq)"
# Version-gated: a row is replaced only by the same memory at a version at least its own.
_PUT_SQL = (
    "INSERT INTO vectors (memory_id, version, text_hash, vector, seq) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (memory_id) DO UPDATE SET version = excluded.version, text_hash = excluded.text_hash,"
    " vector = excluded.vector, seq = excluded.seq WHERE excluded.version >= vectors.version"
)
# Live docs without a vector (or with one of an older text), with the text to embed.
_MISSING_SQL = (
    "SELECT d.id, d.version, d.key, coalesce(f.raw_content, f.content), coalesce(f.raw_tags, f.tags)"
    " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0"
    " AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = d.id AND v.version = d.version)"
    " LIMIT ?"
)


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
    for statement in _VECTOR_SCHEMA:
        db.execute(statement)
    if not has_seq(db):  # a table from before `seq`: its rows are all of batch 0
        db.execute("ALTER TABLE vectors ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
    db.execute(_SEQ_INDEX)


def _batch_seq(db: sqlite3.Connection) -> int:
    """This batch's number for the rows it writes (one more than the last batch's), noted in meta."""
    seq = int(_meta(db, _META_SEQ) or 0) + 1
    _set_meta(db, _META_SEQ, str(seq))
    return seq


def remove(db: sqlite3.Connection, memory_id: str) -> None:
    """A removed memory's vector goes with it (the docs tombstone guards against replays)."""
    if has_table(db):
        db.execute("DELETE FROM vectors WHERE memory_id = ?", (memory_id,))


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
        _set_meta(db, _META_MODEL, name)
        _set_meta(db, _META_COMPLETE, "0")


# Vectors embedded a moment ago in this process (a write's `similar`), by model and text: what the
# indexer of the same process (the local runner) takes instead of embedding the text again, and what
# a retried write reuses. Bounded: ~1.5 kB a vector. Texts being embedded right now are noted too
# (`_embedding`): the indexer may read a batch's records while the write still embeds them (they are
# embedded while the batch is stored), and then waits for those vectors rather than embed them again.
RECENT_VECTORS = 4096
# How long the indexer waits for a write's vectors of its texts: more than a batch of 100 takes.
WAIT_FOR_WRITE_SECONDS = 10.0
_recent: OrderedDict[tuple[str, str], Any] = OrderedDict()
_embedding: dict[tuple[str, str], threading.Event] = {}
_recent_lock = threading.Lock()


def recently_embedded(model: Embedder, text: str, wait: float = 0.0) -> Any | None:
    """text's vector if this process embedded it a moment ago, waiting up to `wait` seconds for it
    when it is being embedded right now."""
    key = (model_name(model), text)
    with _recent_lock:
        found, running = _recent.get(key), _embedding.get(key)
    if found is None and running is not None and wait > 0 and running.wait(wait):
        with _recent_lock:
            found = _recent.get(key)
    return found


def embedded_once(model: Embedder, texts: Sequence[str]) -> Any:
    """The texts' vectors, (len(texts), DIMS) float32: those embedded a moment ago from this
    process's cache, the rest in one call (and kept for the indexer)."""
    import numpy as np

    name = model_name(model)
    with _recent_lock:
        known = {text: _recent.get((name, text)) for text in texts}
        missing = sorted({text for text, vector in known.items() if vector is None})
        done = threading.Event()
        mine = [text for text in missing if _embedding.setdefault((name, text), done) is done]
    try:
        if missing:
            fresh = np.asarray(model.embed(missing), dtype=np.float32)
            with _recent_lock:
                for text, vector in zip(missing, fresh, strict=True):
                    known[text] = _recent[(name, text)] = vector
                while len(_recent) > RECENT_VECTORS:
                    _recent.popitem(last=False)
    finally:
        with _recent_lock:
            for text in mine:
                _embedding.pop((name, text), None)
        done.set()
    if not texts:
        return np.zeros((0, DIMS), dtype=np.float32)
    return np.stack([known[text] for text in texts])  # type: ignore[misc] # every text is known now


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
        vector = recently_embedded(model, text, WAIT_FOR_WRITE_SECONDS)
        if vector is not None:
            ready[digest] = vector
    running = ahead.Ahead(model, [(d, t) for d, t in wanted.items() if d not in ready], ready)
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
    """Store the vectors of `pending` (changes applied in this transaction): a vector of the same
    text already in the generation is reused, one the stream batch embedded ahead is taken (waiting
    for it if need be), the rest embedded in one call. Returns how many were embedded. Only
    versions the docs table still holds are written (a later removal wins)."""
    wanted: list[tuple[Pending, bytes]] = []
    reused: list[tuple[str, int, bytes, bytes, int]] = []
    seq = 0
    for item in pending:
        live = db.execute(
            "SELECT version FROM docs WHERE id = ? AND deleted = 0", (item.memory_id,)
        ).fetchone()
        if live is None or live[0] != item.version:
            continue
        seq = seq or _batch_seq(db)
        digest = text_hash(item.text)
        same = db.execute("SELECT vector FROM vectors WHERE text_hash = ? LIMIT 1", (digest,)).fetchone()
        if same is not None:
            reused.append((item.memory_id, item.version, digest, same[0], seq))
        else:
            wanted.append((item, digest))
    ready = 0
    if _ahead:
        waiting, wanted = wanted, []
        for item, digest in waiting:
            vector = _embedded_ahead(digest)
            if vector is None:
                wanted.append((item, digest))
            else:
                reused.append((item.memory_id, item.version, digest, _pack(vector), seq))
                ready += 1
    db.executemany(_PUT_SQL, reused)
    if not wanted:
        return ready
    embedded = model.embed([item.text for item, _ in wanted])
    rows = [
        (item.memory_id, item.version, digest, _pack(vector), seq)
        for (item, digest), vector in zip(wanted, embedded, strict=True)
    ]
    db.executemany(_PUT_SQL, rows)
    return len(rows) + ready


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
    found = db.execute(_MISSING_SQL, (budget + 1,)).fetchall()
    pending = [
        Pending(i, version, embedded_text(key, content, tags))
        for i, version, key, content, tags in found[:budget]
    ]
    written = write(db, model, pending)
    if len(found) <= budget:
        _set_meta(db, _META_COMPLETE, "1")
    return written


def carry(db: sqlite3.Connection, source: str) -> int:
    """Copy into `db` the vectors of attached database `source` (a previous generation) whose text
    is what a live doc of `db` embeds now: a rebuild re-embeds only what changed."""
    if not db.execute(f"SELECT 1 FROM {source}.sqlite_master WHERE name = 'vectors'").fetchone():  # noqa: S608
        return 0
    rows = db.execute(
        "SELECT d.id, d.version, d.key, coalesce(f.raw_content, f.content), coalesce(f.raw_tags, f.tags)"
        " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0"
    ).fetchall()
    found = []
    for memory_id, version, key, content, tags in rows:
        digest = text_hash(embedded_text(key, content, tags))
        same = db.execute(
            f"SELECT vector FROM {source}.vectors WHERE text_hash = ? LIMIT 1",  # noqa: S608
            (digest,),
        ).fetchone()
        if same is not None:
            found.append((memory_id, version, digest, same[0], 0))
    db.executemany(_PUT_SQL, found)
    return len(found)
