"""Search by meaning, side by side (issue 33): lexical, semantic and hybrid ranking of the same
questions in one run, on three sets. Called by bench/questions.py (inside its moto and index), or
alone: `python bench/meaning.py [--k 5] [--tune]`.

- stem-sharing: bench/data/questions.json (one person's mind, ~250 questions), the questions that
  share a stem with their answer (target: r@3 >= 0.92 stays) and the others;
- paraphrase: bench/data/paraphrase.json, 70 questions that share no content word with the memory
  answering them (family, work, health, diet, pets, vehicles, travel, money, hobbies, habits), over
  memories stored with keys and as content alone (the key MCP `remember` derives); target: hybrid
  r@3 >= 0.9. Checked on every run: a question sharing a stem with its answer is reported;
  `BENCH_PARAPHRASE=paraphrase_holdout` runs bench/data/paraphrase_holdout.json instead, written
  blind to the search code after its constants were chosen (another person, 70 questions, its own
  30 questions with no answer in the mind);
- conversation: bench/data/conversation.json (bench/questions.py's lexical set too), dialogue turns
  stored one memory each (the speaker in the content, speaker and date in the tags) and questions
  about who said or did what and when, split alternately; target: hybrid MRR >= lexical MRR.

Each set's questions are split `tune` / `holdout`: the fusion's constants (synapse.search.fusion)
were chosen on `tune` (`--tune` runs the grid again and prints both halves), `holdout` checks they
were not fitted to those questions. Recall@n: an answering memory among the first n results; MRR:
1 / rank of the first, 0 when none in the first k.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

DATA = Path(__file__).resolve().parent / "data"
# BENCH_PARAPHRASE=paraphrase_holdout: the paraphrase set written blind to the search code after its
# constants were chosen (another person; its own questions with no answer in the mind, `unanswerable`)
PARAPHRASE = os.environ.get("BENCH_PARAPHRASE", "paraphrase")
MODES = ("lexical", "semantic", "hybrid")
TARGET_PARAPHRASE_R3 = 0.9
TARGET_STEM_R3 = 0.92
# The grid `--tune` searches (synapse.search.fusion's constants).
GRID = {
    "BM25_WEIGHT": (0.1, 0.3),
    "SEMANTIC_WEIGHT": (0.5, 1.0),
    "RESCUE_WEIGHT": (3.0, 5.0),
    "RESCUE_FADE": (1.0, 2.0),
    "UNSUPPORTED": (0.5, 1.0),
    "CLOSING_MARGIN": (0.0, 0.05, 1.0),
}


class Asked(NamedTuple):
    q: str
    answers: frozenset[str]  # memory ids
    split: str  # tune / holdout
    group: str  # a subset the table shows apart


def derived_key(category: str, content: str) -> str:
    from synapse.memory.keys import derived_key as server_key

    return server_key(category, content)


def turns_as_memories(data: dict[str, Any]) -> dict[str, Any]:
    """The dialogue's turns as memories, stored as bench/questions.py's conversation set stores them
    (content "Speaker: text", the speaker and the date as tags), and its questions split alternately
    into the tuning and the held-out half."""
    memories = [
        {
            "ref": f"d{session['session']}_{at}",
            "category": "context",
            "key": f"d{session['session']}_{at}",
            "content": f"{speaker}: {text}",
            "tags": [speaker.lower(), session["date"]],
        }
        for session in data["sessions"]
        for at, (speaker, text) in enumerate(session["turns"], start=1)
    ]
    questions = [q | {"split": ("tune", "holdout")[n % 2]} for n, q in enumerate(data["questions"])]
    return {"memories": memories, "questions": questions}


def load(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A set's memories as POST /memory bodies (a content-only memory gets MCP's derived key), with
    `ref`, and its questions."""
    data = json.loads((DATA / f"{name}.json").read_text())
    if "sessions" in data:  # a dialogue (bench/data/conversation.json): one memory per turn
        data = turns_as_memories(data)
    memories = []
    for memory in data["memories"]:
        body = {k: memory[k] for k in ("category", "content", "tags")} | {"ref": memory["ref"]}
        body["key"] = memory["key"] or derived_key(memory["category"], memory["content"])
        body["priority"] = "normal"
        memories.append(body)
    return memories, data["questions"]


def ranks(
    run: Callable[[str, int, str], list[str]], asked: list[Asked], k: int
) -> dict[str, list[int | None]]:
    """Per mode, the rank (1-based) of each question's first answering memory in the first k."""
    found: dict[str, list[int | None]] = {}
    for mode in MODES:
        found[mode] = []
        for question in asked:
            ids = run(question.q, k, mode)
            rank = next((at + 1 for at, i in enumerate(ids) if i in question.answers), None)
            found[mode].append(rank)
    return found


def figures(found: list[int | None]) -> dict[str, float]:
    n = len(found) or 1
    return {
        "MRR": sum(1 / r for r in found if r) / n,
        "r@1": sum(1 for r in found if r and r <= 1) / n,
        "r@3": sum(1 for r in found if r and r <= 3) / n,
    }


def table(title: str, asked: list[Asked], found: dict[str, list[int | None]]) -> list[str]:
    lines = [f"\n{title}", f"{'':22} {'n':>4}   " + "   ".join(f"{m:^20}" for m in MODES)]
    lines.append(f"{'':22} {'':>4}   " + "   ".join(f"{'MRR  r@1  r@3':^20}" for _ in MODES))
    groups = sorted({q.group for q in asked})
    subsets = [("all", lambda q: True)]
    subsets += [(f"  {g}", lambda q, g=g: q.group == g) for g in groups if len(groups) > 1]
    subsets += [("  tune", lambda q: q.split == "tune"), ("  holdout", lambda q: q.split == "holdout")]
    for label, keep in subsets:
        picked = [i for i, q in enumerate(asked) if keep(q)]
        if not picked:
            continue
        cells = []
        for mode in MODES:
            f = figures([found[mode][i] for i in picked])
            cells.append(f"{f['MRR']:.3f} {f['r@1']:.2f} {f['r@3']:.2f}".center(20))
        lines.append(f"{label:22} {len(picked):4d}   " + "   ".join(cells))
    return lines


def searcher(mind_id: str) -> Callable[[str, int, str], list[str]]:
    from synapse.core.errors import BadRequest
    from synapse.search.filters import Mode, SearchFilters
    from synapse.search.service import search

    def run(text: str, k: int, mode: str) -> list[str]:
        try:
            page = search(mind_id, text, SearchFilters(), limit=k, mode=Mode(mode))
        except BadRequest:
            return []
        return [r.memory.id for r in page.results]

    return run


def stored_set(
    name: str,
    store_mind: Callable[[str, list[dict[str, Any]]], tuple[str, list[dict[str, Any]]]],
    index_mind: Callable[[list[dict[str, Any]]], None],
    group_of: Callable[[dict[str, Any]], str],
) -> tuple[str, list[Asked]]:
    """Store and index a set (through the service's write path and the indexer's record path)."""
    memories, questions = load(name)
    mind_id, items = store_mind(name, memories)
    index_mind(items)
    ids = {(i["category"], i["key"]): i["id"] for i in items}
    by_ref = {m["ref"]: ids[(m["category"], m["key"])] for m in memories}
    asked = [
        Asked(q["q"], frozenset(by_ref[a] for a in q["answers"]), q["split"], group_of(q)) for q in questions
    ]
    return mind_id, asked


def paraphrase_overlaps(shares_stem: Callable[[str, list[dict[str, Any]]], bool]) -> list[str]:
    """Paraphrase questions that share a stem with an answering memory (should be none)."""
    memories, questions = load(PARAPHRASE)
    by_ref = {m["ref"]: m for m in memories}
    return [q["q"] for q in questions if shares_stem(q["q"], [by_ref[a] for a in q["answers"]])]


def side_by_side(
    stem_mind: str,
    stem_questions: list[Asked],
    sets: dict[str, tuple[str, list[Asked]]],
    k: int,
) -> dict[str, dict[str, list[int | None]]]:
    """Print the three modes side by side for every set; returns the ranks per set and mode."""
    results: dict[str, dict[str, list[int | None]]] = {}
    started = time.perf_counter()
    everything = {"stem-sharing (questions.json)": (stem_mind, stem_questions), **sets}
    for title, (mind_id, asked) in everything.items():
        found = ranks(searcher(mind_id), asked, k)
        results[title] = found
        print("\n".join(table(f"{title}: first {k} results", asked, found)))
        worse = [(q.q, lex, hyb) for q, lex, hyb in zip(asked, found["lexical"], found["hybrid"], strict=True)
                 if (hyb or k + 1) > (lex or k + 1)]  # fmt: skip
        for text, lex, hyb in worse:
            print(f"    hybrid below lexical: {text!r} (rank {lex} -> {hyb})")
    print(
        f"\n({time.perf_counter() - started:.1f} s for"
        f" {sum(len(a) for _, a in everything.values())} x 3 searches)"
    )
    return results


def verdicts(results: dict[str, dict[str, list[int | None]]], stem_flags: dict[str, list[bool]]) -> None:
    for title, found in results.items():
        if title.startswith("paraphrase"):
            r3 = figures(found["hybrid"])["r@3"]
            verdict = "met" if r3 >= TARGET_PARAPHRASE_R3 else "NOT met"
            print(f"  target hybrid r@3 >= {TARGET_PARAPHRASE_R3} on paraphrases: {r3:.2f}, {verdict}")
        elif title.startswith("conversation"):
            lexical, hybrid = figures(found["lexical"])["MRR"], figures(found["hybrid"])["MRR"]
            verdict = "met" if hybrid >= lexical else "NOT met"
            print(
                f"  target hybrid MRR >= lexical MRR on the conversation log: {hybrid:.3f}"
                f" vs {lexical:.3f}, {verdict}"
            )
        elif title.startswith("stem-sharing"):
            flags = stem_flags[title]
            picked = [r for r, shared in zip(found["hybrid"], flags, strict=True) if shared]
            r3 = figures(picked)["r@3"]
            verdict = "met" if r3 >= TARGET_STEM_R3 else "NOT met"
            print(f"  target hybrid r@3 >= {TARGET_STEM_R3} on shares_stem questions: {r3:.2f}, {verdict}")


def unanswerable() -> list[dict[str, Any]]:
    """Questions with no answer in the paraphrase set's mind (bench/data/unanswerable.json, or the
    set's own `unanswerable`)."""
    data = json.loads((DATA / f"{PARAPHRASE}.json").read_text())
    if "unanswerable" in data:
        return list(data["unanswerable"])
    questions: list[dict[str, Any]] = json.loads((DATA / "unanswerable.json").read_text())["questions"]
    return questions


def scored(mind_id: str, text: str, k: int) -> list[tuple[str, float, str]]:
    """The first k hybrid hits: (id, score, relevance)."""
    from synapse.core.errors import BadRequest
    from synapse.search.filters import Mode, SearchFilters
    from synapse.search.service import search

    try:
        page = search(mind_id, text, SearchFilters(), limit=k, mode=Mode.HYBRID)
    except BadRequest:
        return []
    return [(r.memory.id, r.score, r.relevance) for r in page.results]


def recalled(mind_id: str, text: str) -> list[str]:
    """The ids recall places for `q` (`relevant`), as recall picks them."""
    from synapse.recall.query import RecallQuery
    from synapse.recall.relevant import relevant_memories

    return [m.id for m in relevant_memories(mind_id, RecallQuery(q=text))]


def relevance_report(sets: dict[str, tuple[str, list[Asked]]], k: int) -> None:
    """Does `relevance` mean something? Per set and split: of the questions whose answer is in the
    first k, the share where it is `strong`, and how many of the other hits in the first k are
    strong too (a question, on average: what a laxer rule costs); for the paraphrase set's mind, the
    questions with no answer in it (bench/data/unanswerable.json) answered with no `strong` hit; and
    recall `q`: the answer among recall's `relevant` memories."""
    print(f"\nRelevance (hybrid, first {k}): answer strong | no-answer questions without a strong hit")
    for title, (mind_id, asked) in sets.items():
        for split in ("tune", "holdout", None):
            picked = [q for q in asked if split is None or q.split == split]
            strong = found = others = 0
            for question in picked:
                hits = scored(mind_id, question.q, k)
                bands = [band for i, _, band in hits if i in question.answers]
                others += sum(band == "strong" for i, _, band in hits if i not in question.answers)
                if bands:
                    found += 1
                    strong += bands[0] == "strong"
                    if bands[0] != "strong" and split is None and os.environ.get("BENCH_WHY"):
                        explain(mind_id, question.q, k, question.answers)
            label = split or "all"
            print(f"  {title:30} {label:8} answer strong {strong}/{found} = {strong / max(found, 1):.2f};"
                  f" other hits strong {others / max(len(picked), 1):.2f} a question")  # fmt: skip
        if title.startswith("paraphrase"):
            none = unanswerable()
            for split in ("tune", "holdout", None):
                picked = [q for q in none if split is None or q["split"] == split]
                quiet = 0
                for question in picked:
                    hits = scored(mind_id, question["q"], k)
                    quiet += not any(band == "strong" for _, _, band in hits)
                    if split is None and os.environ.get("BENCH_WHY"):
                        explain(mind_id, question["q"], k)
                    if split is None and os.environ.get("BENCH_CALIBRATE"):
                        print(f"      {question['q']!r}: {[(round(sc, 3), b) for _, sc, b in hits[:3]]}")
                label = split or "all"
                print(f"  {'no answer in the mind':30} {label:8} no strong hit {quiet}/{len(picked)}"
                      f" = {quiet / len(picked):.2f}")  # fmt: skip
            in_relevant = sum(bool(set(recalled(mind_id, q.q)) & q.answers) for q in asked)
            empty = sum(not recalled(mind_id, q["q"]) for q in none)
            print(f"  recall q on {title}: answer in `relevant` {in_relevant}/{len(asked)}"
                  f" = {in_relevant / len(asked):.2f}; no-answer questions with `relevant` empty"
                  f" {empty}/{len(none)}")  # fmt: skip


def explain(mind_id: str, text: str, k: int, answers: frozenset[str] | None = None) -> None:
    """BENCH_WHY=1: what a relevance rule has to tell apart. The answer's hit of a question whose
    answer came back weak (`answers`), or every strong hit of a question with no answer in the mind
    (None): its score, similarity, coverage and the question's words it matched."""
    from synapse.search.filters import Mode, SearchFilters
    from synapse.search.service import search

    page = search(mind_id, text, SearchFilters(), limit=k, mode=Mode.HYBRID)
    kind = "weak answer" if answers is not None else "strong, no answer"
    for r in page.results:
        if r.memory.id in answers if answers is not None else r.relevance == "strong":
            print(f"      {kind} {text!r} -> {r.memory.content[:60]!r} score {r.score:.3f}"
                  f" similarity {r.similarity} coverage {r.coverage} matched {r.matched}")  # fmt: skip


def score_samples(sets: dict[str, tuple[str, list[Asked]]], k: int, split: str) -> None:
    """For calibrating fusion.STRONG_SCORE on one split: the answers' scores and the best score of
    each no-answer question."""
    right: list[float] = []
    wrong: list[float] = []
    for title, (mind_id, asked) in sets.items():
        for question in asked:
            if question.split != split:
                continue
            hits = scored(mind_id, question.q, k)
            right += [score for i, score, _ in hits if i in question.answers][:1]
        if title.startswith("paraphrase"):
            for question in unanswerable():
                if question["split"] == split:
                    hits = scored(mind_id, question["q"], k)
                    wrong.append(max((score for _, score, _ in hits), default=0.0))
    right.sort()
    wrong.sort()
    for threshold in [x / 100 for x in range(30, 131, 5)]:
        kept = sum(s >= threshold for s in right) / max(len(right), 1)
        quiet = sum(s < threshold for s in wrong) / max(len(wrong), 1)
        print(f"  {split} threshold {threshold:.2f}: answers strong {kept:.2f}, no-answer quiet {quiet:.2f}")


def grid() -> Iterator[dict[str, float]]:
    names = list(GRID)
    for values in itertools.product(*(GRID[n] for n in names)):
        yield dict(zip(names, values, strict=True))


def tune(everything: dict[str, tuple[str, list[Asked]]], k: int) -> None:
    """Try every point of GRID on the hybrid side; print the best by the tune half's worst goal
    margin, with both halves' figures (holdout: not used to choose)."""
    from synapse.search import fusion

    kept = {name: getattr(fusion, name) for name in GRID}
    lexical = {t: ranks_one(everything[t], k, "lexical") for t in everything}
    scored = []
    try:
        for point in grid():
            for name, value in point.items():
                setattr(fusion, name, value)
            hybrid = {t: ranks_one(everything[t], k, "hybrid") for t in everything}
            scored.append(
                (
                    point,
                    _goals(everything, lexical, hybrid, "tune"),
                    _goals(everything, lexical, hybrid, "holdout"),
                )
            )
    finally:
        for name, value in kept.items():
            setattr(fusion, name, value)
    # Every goal met on the tune half first (by the worst margin, capped at 0), then paraphrase MRR.
    scored.sort(
        key=lambda s: (
            -min(0.0, *(v for n, v in s[1].items() if n != "paraphrase MRR")),
            -s[1]["paraphrase MRR"],
        )
    )
    print(
        "\nFusion grid (margins over the goals: paraphrase r@3 - 0.9, stem r@3 - 0.92,"
        " conversation MRR - lexical)"
    )
    for point, on_tune, on_holdout in scored:
        print(f"  {point}  tune {_shown(on_tune)}  holdout {_shown(on_holdout)}")


def ranks_one(entry: tuple[str, list[Asked]], k: int, mode: str) -> list[int | None]:
    mind_id, asked = entry
    run = searcher(mind_id)
    out = []
    for question in asked:
        ids = run(question.q, k, mode)
        out.append(next((at + 1 for at, i in enumerate(ids) if i in question.answers), None))
    return out


def _goals(
    everything: dict[str, tuple[str, list[Asked]]],
    lexical: dict[str, list[int | None]],
    hybrid: dict[str, list[int | None]],
    split: str,
) -> dict[str, float]:
    margins = {}
    for title, (_, asked) in everything.items():
        picked = [i for i, q in enumerate(asked) if q.split == split]
        if title.startswith("paraphrase"):
            margins["paraphrase"] = figures([hybrid[title][i] for i in picked])["r@3"] - TARGET_PARAPHRASE_R3
            margins["paraphrase MRR"] = figures([hybrid[title][i] for i in picked])["MRR"]
        elif title.startswith("conversation"):
            margins["conversation"] = (
                figures([hybrid[title][i] for i in picked])["MRR"]
                - figures([lexical[title][i] for i in picked])["MRR"]
            )
        else:
            stem = [i for i in picked if asked[i].group == "shares_stem"]
            margins["stem"] = figures([hybrid[title][i] for i in stem])["r@3"] - TARGET_STEM_R3
    return margins


def _shown(margins: dict[str, float]) -> str:
    return " ".join(f"{name} {value:+.3f}" for name, value in sorted(margins.items()))


def mean(values: list[float]) -> float:
    return statistics.mean(values) if values else 0.0


if __name__ == "__main__":
    sys.exit("run bench/questions.py (it stores the sets and calls this module)")
