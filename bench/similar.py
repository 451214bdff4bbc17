"""Where a write is said to repeat a memory: `python bench/similar.py`.

Labelled pairs of memories (bench/data/similar_pairs.json) as an agent stores them, embedded the way
the index embeds them (`synapse.index.vectors.embedded_text`: key as words, content, tags), with the
model that ships. `same`: the second restates or updates the first (the agent should have updated
it: "Drives a 2019 Tesla Model 3" / "Drives a 2024 BMW i4 now; sold the Tesla"); `different`: two
facts of the same person, often of the same topic, that must both be kept ("Allergic to peanuts" /
"Vegetarian since 2019"). For each threshold: precision and recall of "similar" on the pairs, and
the highest similarity of a `different` pair (an alarm between unrelated facts). The chosen
threshold is `synapse.search.repeats.SIMILAR_THRESHOLD`: the lowest with precision >= 0.9 and no
`different` pair above it. Also: what `similar` costs a store (embedding one memory, the matrix
product over a 10,000-memory mind), p50 over 200 writes.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse")]

import numpy as np  # noqa: E402
from synapse.index import vectors  # noqa: E402
from synapse.memory.keys import derived_key  # noqa: E402
from synapse.search import repeats  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "similar_pairs.json"
THRESHOLDS = [round(0.5 + 0.025 * i, 3) for i in range(17)]


def text(memory: dict[str, object] | str) -> str:
    if isinstance(memory, str):
        return vectors.embedded_text(derived_key("note", memory), memory, "")
    return vectors.embedded_text(
        str(memory["key"]), str(memory["content"]), ", ".join(memory.get("tags") or [])
    )  # type: ignore[arg-type]


def main() -> int:
    pairs = json.loads(DATA.read_text())["pairs"]
    model = vectors.embedder()
    assert model is not None, "no embedding model in this environment"
    firsts = model.embed([text(p["a"]) for p in pairs])
    seconds = model.embed([text(p["b"]) for p in pairs])
    sims = np.sum(firsts * seconds, axis=1)
    same = [float(s) for s, p in zip(sims, pairs, strict=True) if p["label"] == "same"]
    different = [float(s) for s, p in zip(sims, pairs, strict=True) if p["label"] == "different"]
    print(f"{len(same)} same pairs (mean similarity {statistics.mean(same):.3f}, lowest {min(same):.3f}),")
    print(
        f"{len(different)} different pairs (mean {statistics.mean(different):.3f},"
        f" highest {max(different):.3f})"
    )
    print(f"\n{'threshold':>9}  precision  recall  alarms on different pairs")
    for threshold in THRESHOLDS:
        hits = sum(s >= threshold for s in same)
        alarms = sum(s >= threshold for s in different)
        precision = hits / (hits + alarms) if hits + alarms else 1.0
        mark = "  <- SIMILAR_THRESHOLD" if threshold == repeats.SIMILAR_THRESHOLD else ""
        print(f"{threshold:9.3f}  {precision:9.2f}  {hits / len(same):6.2f}  {alarms:6d}{mark}")
    print("\nclosest different pairs:")
    order = sorted(
        ((float(s), p) for s, p in zip(sims, pairs, strict=True) if p["label"] == "different"),
        key=lambda x: -x[0],
    )
    for s, p in order[:4]:
        print(f"  {s:.3f}  {p['a']!r} / {p['b']!r}")
    print("missed same pairs at the threshold:")
    for s, p in zip(sims, pairs, strict=True):
        if p["label"] == "same" and s < repeats.SIMILAR_THRESHOLD:
            print(f"  {float(s):.3f}  {p['a']!r} / {p['b']!r}")
    cost(model)
    return 0


def cost(model: vectors.Embedder) -> None:
    """What `similar` adds to a store once the model is loaded: one embedding and one matrix product
    over a 10,000-memory mind (the reader and its matrix are cached per generation)."""
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((10_000, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    samples, cpu = [], []
    for n in range(200):
        started, started_cpu = time.perf_counter(), time.thread_time()
        vector = model.embed([f"Stored fact number {n}: prefers the window seat on trains"])[0]
        scores = matrix @ vector
        np.argpartition(-scores, 4)[:4]
        samples.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
    print(
        "\nsimilar's cost on a store (model loaded, 10k memories):"
        f" p50 {statistics.median(samples) * 1000:.1f} ms wall, {statistics.median(cpu) * 1000:.1f} ms CPU"
    )


if __name__ == "__main__":
    raise SystemExit(main())
