"""Incremental publishing: a batch is appended to the base generation's log (only the pages it changed),
readers see base + log as one index, and compaction into a new base changes no search result."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from synapse.index import generations, readers
from synapse.index.documents import Change, Doc
from synapse.index.writer import Writer, compact
from synapse.search.filters import SearchFilters
from synapse.search.query import parse_query
from synapse.search.ranking import Hit, index_hits

from tests.support.indexing import apply_batch, copy_of, live_rows

MIND = "m_logTest000000000000000"
NOW = "2026-11-30T12:00:00.000Z"
WORDS = ["alpha", "beta", "gamma", "delta", "schäfer", "ёлка", "omega", "sigma"]


def doc(n: int, content: str, version: int = 1, tags: tuple[str, ...] = ("t",)) -> Doc:
    return Doc(
        id=f"mem_{n:04d}",
        mind_id=MIND,
        category="fact",
        key=f"key_{n}",
        content=content,
        tags=tags,
        priority=("low", "normal", "high")[n % 3],
        updated_at=f"2026-11-{1 + n % 28:02d}T08:00:00.000Z",
        expires_at=None,
        version=version,
    )


def text(n: int, salt: int = 0) -> str:
    return " ".join(WORDS[(n * 7 + i * 3 + salt) % len(WORDS)] for i in range(1 + (n + salt) % 9))


def search(base: Path, query: str, tag: str | None = None) -> list[Hit]:
    return index_hits(current(base), parse_query(query), SearchFilters(tag=tag), 20, 0, NOW)[0]


def current(base: Path) -> sqlite3.Connection:
    db = readers.reader(MIND, base)
    assert db is not None
    return db


def ids(base: Path, query: str) -> list[str]:
    return [hit.id for hit in search(base, query)]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def built_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index-log-base")
    apply_batch(MIND, [Change.upsert(doc(n, text(n))) for n in range(200)], root)
    return root


@pytest.fixture(name="base")
def base_fixture(built_base: Path, tmp_path: Path) -> Path:
    """A mind whose base generation holds 200 memories (built once, a copy for each test)."""
    return copy_of(built_base, tmp_path)


def test_a_batch_is_appended_to_the_log_and_leaves_the_base_untouched(base: Path) -> None:
    # Given a mind with a base generation
    folder = base / MIND
    first = generations.current_generation(folder)
    assert first is not None
    before = digest(first)
    # When a batch of changes is published
    apply_batch(MIND, [Change.upsert(doc(n, text(n, salt=1), version=2)) for n in range(5)], base)
    # Then no new base was written: the base is byte for byte the same, the batch is in its log
    assert generations.current_generation(folder) == first and digest(first) == before
    assert sorted(p.name for p in folder.glob("gen-*")) == ["gen-000001.sqlite", "gen-000001.sqlite-wal"]
    # And the log holds a few pages, not a copy of the mind (each of the two FTS5 indexes, the stems
    # and the words as written, writes its own new segment: 20 pages here, the base 34)
    assert 0 < generations.log_bytes(first) < first.stat().st_size * 0.7
    assert generations.pointer_text(folder) == "gen-000001.sqlite 1"


def test_an_update_in_the_log_shadows_the_base_row(base: Path) -> None:
    # Given memory 7 is in the base, and no memory holds the word "unique"
    assert ids(base, "unique") == [] and "mem_0007" in ids(base, f'"{text(7)}"')
    # When a batch updates it
    apply_batch(MIND, [Change.upsert(doc(7, "omega omega unique", version=2))], base)
    # Then searches see the new text and only the new text
    assert ids(base, "unique") == ["mem_0007"]
    assert "mem_0007" not in ids(base, f'"{text(7)}"')
    (row,) = [r for r in live_rows(current(base)) if r.id == "mem_0007"]
    assert (row.version, row.fts_content) == (2, "omega omega unique")


def test_a_delete_in_the_log_hides_the_base_row(base: Path) -> None:
    # Given memory 3 is in the base
    phrase = f'"{text(3)}"'
    assert "mem_0003" in ids(base, phrase)
    # When a batch deletes it
    apply_batch(MIND, [Change(MIND, "mem_0003", 1, None)], base)
    # Then no search finds it, and a replay of its older image does not bring it back
    assert "mem_0003" not in ids(base, phrase)
    assert apply_batch(MIND, [Change.upsert(doc(3, text(3)))], base) is None
    assert "mem_0003" not in ids(base, phrase)
    assert "mem_0003" not in [row.id for row in live_rows(current(base))]


QUERIES = [
    *WORDS,
    "alpha beta",
    '"gamma delta"',
    "sig*",
    "alpha OR omega",
    "beta NOT gamma",
    "schafer",
    "елка",
]


def every_answer(base: Path) -> list[list[Hit]]:
    return [search(base, q) for q in QUERIES] + [search(base, q, tag="u") for q in WORDS]


def test_compaction_keeps_every_result_identical(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given many batches of updates, deletions and new memories in the base's log (none compacted)
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 1 << 40)
    for batch in range(1, 6):
        changes = [
            Change.upsert(doc(n, text(n, salt=batch), version=batch + 1, tags=("u",)))
            for n in range(batch, 200, 7)
        ]
        changes += [Change(MIND, f"mem_{n:04d}", batch + 1, None) for n in range(batch * 3, 200, 41)]
        changes += [Change.upsert(doc(200 + batch * 10 + i, text(i, salt=batch))) for i in range(10)]
        apply_batch(MIND, changes, base)
    folder = base / MIND
    assert generations.current_generation(folder) == folder / "gen-000001.sqlite"
    answers = every_answer(base)
    rows = live_rows(current(base))
    assert any(answers) and len(rows) > 200
    # When the log is compacted into a new base
    published = compact(MIND, base)
    assert published == folder / "gen-000002.sqlite" and generations.log_bytes(published) == 0
    assert generations.pointer_text(folder) == "gen-000002.sqlite"
    # Then every search answers exactly as before: ids, order, scores, snippets
    assert every_answer(base) == answers
    assert live_rows(current(base)) == rows
    # And the next batch goes to the new base's log
    apply_batch(MIND, [Change.upsert(doc(999, "zeta"))], base)
    assert ids(base, "zeta") == ["mem_0999"] and generations.pointer_text(folder) == "gen-000002.sqlite 1"


def test_a_batch_that_grows_the_log_past_its_bound_compacts_it(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a log bound every batch passes
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 0)
    monkeypatch.setattr(generations, "COMPACT_SCALE_BYTES", 0)
    # When a batch is published
    with Writer(MIND, base) as writer:
        writer.apply(Change.upsert(doc(999, "zeta")))
        published = writer.publish()
    # Then it is published, and then compacted into a new base with an empty log
    folder = base / MIND
    assert published == folder / "gen-000002.sqlite" == writer.compacted
    assert generations.pointer_text(folder) == "gen-000002.sqlite" and generations.log_bytes(published) == 0
    assert ids(base, "zeta") == ["mem_0999"]


def test_a_reader_of_generation_n_keeps_working_while_n_plus_1_is_published(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a reader that opened the current generation (base + a first batch in its log)
    apply_batch(MIND, [Change.upsert(doc(1, "kappa", version=2))], base)
    held = readers.open_generation(base / MIND / "gen-000001.sqlite")
    query = parse_query("kappa OR lambda")
    before = index_hits(held, query, SearchFilters(), 20, 0, NOW)
    assert [h.id for h in before[0]] == ["mem_0001"]
    # When the next batch is appended to the same log
    apply_batch(MIND, [Change.upsert(doc(2, "lambda", version=2)), Change(MIND, "mem_0001", 2, None)], base)
    # Then the held reader still answers from its generation, the same answer
    assert index_hits(held, query, SearchFilters(), 20, 0, NOW) == before
    # And a new reader sees the new one
    assert ids(base, "kappa OR lambda") == ["mem_0002"]
    # When a compaction then publishes a new base (the old one stays for the grace period)
    monkeypatch.setattr(generations, "COMPACT_MIN_BYTES", 0)
    monkeypatch.setattr(generations, "COMPACT_SCALE_BYTES", 0)
    apply_batch(MIND, [Change.upsert(doc(3, "mu", version=2))], base)
    generations.collect_garbage(base / MIND)
    # Then the held reader still answers the same
    assert index_hits(held, query, SearchFilters(), 20, 0, NOW) == before
    assert ids(base, "kappa OR lambda") == ["mem_0002"] and ids(base, "mu") == ["mem_0003"]


def test_a_writer_that_dies_mid_batch_leaves_the_published_log(base: Path) -> None:
    apply_batch(MIND, [Change.upsert(doc(1, "kappa", version=2))], base)
    pointer = generations.pointer_text(base / MIND)
    # When a writer appends many changes (pages spill into the log) and then dies before publishing
    with pytest.raises(RuntimeError), Writer(MIND, base) as writer:
        for n in range(200):
            writer.apply(Change.upsert(doc(n, f"doomed {text(n)}", version=9)))
        raise RuntimeError("the invocation died")
    # Then readers see what was published, nothing of the dead batch
    assert generations.pointer_text(base / MIND) == pointer
    assert ids(base, "doomed") == [] and ids(base, "kappa") == ["mem_0001"]
    # And the next batch publishes on top of it
    apply_batch(MIND, [Change.upsert(doc(5, "nu", version=3))], base)
    assert ids(base, "nu") == ["mem_0005"] and ids(base, "doomed") == []
    assert generations.pointer_text(base / MIND) == "gen-000001.sqlite 2"


def test_a_base_from_before_logs_is_replaced_by_one_with_a_log(tmp_path: Path) -> None:
    # Given a base in rollback-journal mode (as published before logs were used)
    apply_batch(MIND, [Change.upsert(doc(1, "kappa"))], tmp_path)
    first = tmp_path / MIND / "gen-000001.sqlite"
    legacy = sqlite3.connect(first, isolation_level=None)
    legacy.execute("PRAGMA journal_mode = DELETE")
    legacy.close()
    generations.log_of(first).unlink(missing_ok=True)
    assert not generations.is_log_mode(first) and ids(tmp_path, "kappa") == ["mem_0001"]
    # When the next batch is published
    second = apply_batch(MIND, [Change.upsert(doc(2, "lambda"))], tmp_path)
    # Then it is a new base, which later batches append to
    assert second == tmp_path / MIND / "gen-000002.sqlite" and generations.is_log_mode(second)
    assert sorted(ids(tmp_path, "kappa OR lambda")) == ["mem_0001", "mem_0002"]
    assert apply_batch(MIND, [Change.upsert(doc(3, "mu"))], tmp_path) == second


@pytest.mark.parametrize(
    ("base_bytes", "most_read"),
    [(150_000, 2.75), (1_500_000, 1.45), (15_000_000, 1.15), (150_000_000, 1.05)],
)
def test_a_cold_open_reads_a_bounded_multiple_of_the_base(base_bytes: int, most_read: float) -> None:
    # Given a base of a 100- to 100,000-memory mind (1.5 kB of index per memory)
    threshold = generations.compaction_threshold(base_bytes)
    # Then the log it compacts at is never under the floor, and grows as the square root of the base
    assert threshold >= generations.COMPACT_MIN_BYTES
    assert threshold == max(
        generations.COMPACT_MIN_BYTES, (generations.COMPACT_SCALE_BYTES * base_bytes) ** 0.5
    )
    # And a first open (base + the whole log) reads at most that multiple of the base (docs/scaling.md)
    assert (base_bytes + threshold) / base_bytes <= most_read
