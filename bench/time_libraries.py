"""Which way to read time expressions: `python bench/time_libraries.py [--parsedatetime-path DIR]`.

A labelled set of expressions (written for this bench) with the window of days each means on
Thursday 2026-12-03 10:00 UTC, read by each candidate in a fresh process: import CPU, first-call and
per-call CPU, and accuracy two ways: `in window` (the point a library returns lies in the expected
window: what a library can do at best) and `exact window` (the window itself: what search needs).
Libraries that are not installed are skipped (parsedatetime is not a dependency: give the folder it
was installed into with `pip install --target DIR parsedatetime==2.6`). docs/time.md quotes the output.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-12-03T10:00:00+00:00"
# expression → (first day, last day) on NOW, in the future sense unless the sentence is past
LABELLED: dict[str, tuple[str, str]] = {
    "next week": ("2026-12-07", "2026-12-13"),
    "last week": ("2026-11-23", "2026-11-29"),
    "this week": ("2026-11-30", "2026-12-06"),
    "last weekend": ("2026-11-28", "2026-11-29"),
    "this weekend": ("2026-12-05", "2026-12-06"),
    "next weekend": ("2026-12-12", "2026-12-13"),
    "in October": ("2027-10-01", "2027-10-31"),
    "what did we do in October": ("2026-10-01", "2026-10-31"),
    "yesterday": ("2026-12-02", "2026-12-02"),
    "today": ("2026-12-03", "2026-12-03"),
    "tomorrow": ("2026-12-04", "2026-12-04"),
    "the day after tomorrow": ("2026-12-05", "2026-12-05"),
    "3 days ago": ("2026-11-29", "2026-12-01"),
    "two weeks ago": ("2026-11-16", "2026-11-22"),
    "on Friday": ("2026-12-04", "2026-12-04"),
    "next Tuesday": ("2026-12-08", "2026-12-08"),
    "last Monday": ("2026-11-30", "2026-11-30"),
    "Dec 9": ("2026-12-09", "2026-12-09"),
    "14 December 2026": ("2026-12-14", "2026-12-14"),
    "2026-12-14": ("2026-12-14", "2026-12-14"),
    "January 5": ("2027-01-05", "2027-01-05"),
    "this month": ("2026-12-01", "2026-12-31"),
    "next month": ("2027-01-01", "2027-01-31"),
    "last month": ("2026-11-01", "2026-11-30"),
    "last year": ("2025-01-01", "2025-12-31"),
    "next year": ("2027-01-01", "2027-12-31"),
    "in May": ("2027-05-01", "2027-05-31"),
    "in 2025": ("2025-01-01", "2025-12-31"),
    "in 3 days": ("2026-12-05", "2026-12-07"),
    "the 9th": ("2026-12-09", "2026-12-09"),
    "recently": ("2026-11-19", "2026-12-03"),
    "upcoming": ("2026-12-03", "2026-12-17"),
}

_RUNNER = r"""
import json, sys, time
from datetime import datetime, date, timedelta, UTC
labelled = json.loads(sys.argv[2]); now = datetime.fromisoformat(sys.argv[3]); name = sys.argv[1]
t0 = time.process_time()
if name == "synapse.when":
    from synapse.when.questions import read_question
    def read(text):
        found = read_question(text, now, UTC).window
        return None if found is None else (found.start, found.end)
elif name == "dateparser":
    import dateparser
    from dateparser.search import search_dates
    settings = {"RELATIVE_BASE": now.replace(tzinfo=None), "PREFER_DATES_FROM": "future"}
    def read(text):
        found = dateparser.parse(text, settings=settings)
        if found is None:
            hits = search_dates(text, settings=settings) or []
            found = hits[0][1] if hits else None
        return None if found is None else (found.date(), found.date())
elif name == "parsedatetime":
    import parsedatetime
    calendar = parsedatetime.Calendar(version=parsedatetime.VERSION_CONTEXT_STYLE)
    def read(text):
        found, context = calendar.parseDT(text, sourceTime=now.replace(tzinfo=None))
        if not context.hasDateOrTime:
            return None
        return (found.date(), found.date())
imported = time.process_time() - t0
timings, exact, inside, parsed = [], 0, 0, 0
for text, (first, last) in labelled.items():
    t = time.process_time(); got = read(text); timings.append(time.process_time() - t)
    first, last = date.fromisoformat(first), date.fromisoformat(last)
    if got is None: continue
    parsed += 1
    exact += got == (first, last)
    inside += first <= got[0] <= last
print(json.dumps({"import_ms": imported * 1000, "first_ms": timings[0] * 1000,
                  "rest_ms": sum(timings[1:]) * 1000, "parsed": parsed, "in_window": inside, "exact": exact}))
"""


def measure(name: str, path: str | None) -> dict[str, float] | None:
    extra = [str(ROOT / "layers" / "synapse")] + ([path] if path else [])
    env_path = ":".join(extra)
    answer = subprocess.run(
        [sys.executable, "-c", _RUNNER, name, json.dumps(LABELLED), NOW],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    if answer.returncode != 0:
        print(f"{name}: not measured ({answer.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    return json.loads(answer.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parsedatetime-path", help="the folder parsedatetime was installed into")
    args = parser.parse_args()
    total = len(LABELLED)
    print(f"{total} labelled expressions, now = {NOW} (CPU times, one fresh process each)")
    print(
        f"{'reader':16} {'import ms':>9} {'1st call ms':>11} {'rest ms':>8}"
        f" {'parsed':>7} {'in window':>9} {'exact':>6}"
    )
    for name, path in (
        ("synapse.when", None),
        ("dateparser", None),
        ("parsedatetime", args.parsedatetime_path),
    ):
        found = measure(name, path)
        if found is None:
            continue
        print(
            f"{name:16} {found['import_ms']:9.1f} {found['first_ms']:11.1f} {found['rest_ms']:8.1f}"
            f" {found['parsed']:>4}/{total} {found['in_window']:>6}/{total} {found['exact']:>3}/{total}"
        )


if __name__ == "__main__":
    main()
