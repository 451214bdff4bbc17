"""EFS bytes a change writes to a mind's index, compactions included: a compaction that copies the
base (before) against one that reuses the retired base (after, `synapse.index.compaction`), side by
side in one run (issue 43 item 3).

    .venv/bin/python bench/compaction.py [--sizes 1000,10000,100000] [--changes 400]

For each size N, a mind of N memories (~150 characters of random lowercase words, two tags each;
vectors from a seeded random embedder of the shipped model's 384 dimensions: bytes are measured
here, not meaning) is indexed through the `Writer` into one base. Then, from a copy of that folder
for each side, `--changes` batches of one change each (an update of a random memory, the same
sequence both sides, counted from the first compaction on: the steady state), each published and
compacted when the real rule says so (`compaction.due`, `generations.compaction_threshold`), each
retired base taken as past its grace period (a busy mind's compaction that must wait only lets its
log grow, which the reuse turns into fewer distinct pages). Counted: the bytes this process passes
to write() (`/proc/self/io` wchar: log frames, compactions, change lists, CURRENT) per change, and
the compactions. Before: `REUSE_MIN_BYTES` set past any base (every compaction copies the base, as
before issue 43's reuse); after: as shipped.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]

from synapse import embedding  # noqa: E402
from synapse.index import generations  # noqa: E402
from synapse.index.documents import Change, Doc  # noqa: E402
from synapse.index.writer import Writer  # noqa: E402

MIND = "m_compactionBench0000000"
SEED = 20261207
DIMENSIONS = 384


class RandomEmbedder:
    """Unit vectors from a seeded generator: the shipped model's shape, none of its meaning or cost."""

    name = "bench-random-384"
    dimensions = DIMENSIONS

    def __init__(self) -> None:
        import numpy as np  # after synapse.embedding, which pins BLAS to one thread

        self._rng = np.random.default_rng(SEED)

    def embed(self, texts: Any) -> Any:
        import numpy as np

        vectors = self._rng.standard_normal((len(texts), DIMENSIONS)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> Any:
        return self.embed([text])[0]


def words() -> list[str]:
    path = Path("/usr/share/dict/words")
    if path.exists():
        found = [w for w in path.read_text().split() if w.isalpha() and w.islower() and 3 <= len(w) <= 9]
        return found[:20000]
    rng = random.Random(SEED)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(20000)]


def doc(n: int, version: int, vocabulary: list[str], rng: random.Random) -> Doc:
    text = ""
    while len(text) < 150:
        text += rng.choice(vocabulary) + " "
    return Doc(
        id=f"mem_{n:07d}",
        mind_id=MIND,
        category="fact",
        key=f"key_{n}",
        content=text.strip(),
        tags=(f"t{n % 50}", f"u{n % 7}"),
        priority="normal",
        updated_at="2026-12-07T08:00:00.000Z",
        expires_at=None,
        version=version,
    )


def wchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise RuntimeError("no wchar in /proc/self/io")


def build(base: Path, size: int, vocabulary: list[str]) -> None:
    rng = random.Random(SEED)
    with Writer(MIND, base) as writer:
        for n in range(size):
            writer.apply(Change.upsert(doc(n, 1, vocabulary, rng)))
        writer.publish()


def run_side(base: Path, size: int, changes: int, vocabulary: list[str], reuse: bool) -> dict[str, float]:
    """Bytes written per change over `changes` one-change batches, and the compactions they caused."""
    generations.GRACE_SECONDS = -1.0  # every retired base is past its grace period (the docstring)
    generations.REUSE_MIN_BYTES = (1 << 20) if reuse else 1 << 62
    rng = random.Random(SEED + 1)

    def change(version: int) -> bool:
        with Writer(MIND, base) as writer:
            writer.apply(Change.upsert(doc(rng.randrange(size), version, vocabulary, rng)))
            writer.publish()
            return writer.compacted is not None

    version = 2
    while not change(version):  # the steady state: a base published by a compaction, not a build
        version += 1
    compactions = 0
    started = wchar()
    for round_ in range(changes):
        compactions += change(version + 1 + round_)
    written = wchar() - started
    current = generations.current_generation(base / MIND)
    assert current is not None
    return {"per_change": written / changes, "compactions": compactions, "base": current.stat().st_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--changes", type=int, default=400)
    args = parser.parse_args()
    embedding._loaded[:] = [RandomEmbedder()]  # type: ignore[list-item]
    vocabulary = words()
    print(f"{'memories':>9} {'base MB':>8} | {'copy: kB/change':>16} {'compactions':>11} |"
          f" {'reuse: kB/change':>17} {'compactions':>11} | {'after/before':>12}")  # fmt: skip
    for size in (int(s) for s in args.sizes.split(",") if s):
        with tempfile.TemporaryDirectory(prefix="synapse-compaction-") as folder:
            seeded = Path(folder) / "seeded"
            build(seeded, size, vocabulary)
            sides = {}
            for name, reuse in (("copy", False), ("reuse", True)):
                base = Path(folder) / name
                shutil.copytree(seeded, base)
                sides[name] = run_side(base, size, args.changes, vocabulary, reuse)
                shutil.rmtree(base)
        before, after = sides["copy"], sides["reuse"]
        ratio = after["per_change"] / before["per_change"]
        print(f"{size:>9,} {before['base'] / 1e6:>8.1f} | {before['per_change'] / 1e3:>16.1f}"
              f" {before['compactions']:>11} | {after['per_change'] / 1e3:>17.1f}"
              f" {after['compactions']:>11} | {ratio:>11.2f}x", flush=True)  # fmt: skip


if __name__ == "__main__":
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    main()
