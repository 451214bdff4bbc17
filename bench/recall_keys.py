"""What leaving derived keys out of recall saves: `python bench/recall_keys.py`.

bench/data/questions.json's memories, each stored as a content-only note (its key derived by the
server, as a content-only write stores it), recalled in full: the text's length with a key line per
entry (before) and without the derived ones (now), and the share saved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "synapse"))

from synapse.memory.counts import Tally  # noqa: E402
from synapse.memory.keys import derived_key  # noqa: E402
from synapse.memory.kinds import Memory  # noqa: E402
from synapse.recall import text  # noqa: E402

STAMP = "2026-12-01T00:00:00.000Z"


def recall_chars(memories: list[Memory]) -> int:
    tally = Tally()
    for memory in memories:
        tally += Tally.of(memory)
    return len(text.compose("m_bench", "Bench", tally, iter(memories), iter([]), 1000, 400_000).text)


def main() -> None:
    data = json.loads((ROOT / "bench" / "data" / "questions.json").read_text(encoding="utf-8"))
    notes = [
        Memory(f"mem_{n}", "m_bench", "note", derived_key("note", m["content"]), m["content"], [], "normal",
               "agent", False, 0.7, None, STAMP, STAMP, 1)
        for n, m in enumerate(data["memories"])
    ]  # fmt: skip
    before, now = recall_chars(notes), recall_chars([m._replace(key_derived=True) for m in notes])
    print(f"{len(notes)} content-only notes: recall text {before} -> {now} characters")
    print(f"ratio now/before {now / before:.2f} ({1 - now / before:.0%} of the text was derived key lines)")


if __name__ == "__main__":
    main()
