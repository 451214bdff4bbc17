"""The recall text of SPEC §4, and the budget rules that decide what it shows. Pure: no I/O.

The text, every line ending in a newline:

    Mind: <name>
    Memories: <N> total (<X> verified, <Y> unverified)
    <blank>
    [001] <category> (<PRIORITY>) [verified|unverified]
      <key>                                     (left out when derived from the content)
      <content, each line indented two spaces>
      On: <date>                     (with an occurred_at: 2026-12-09, or 2026-12-09 14:30 UTC)
      Tags: <tag>, <tag>                        (left out when there are none)
      (change proposed by an agent, pending review)   (only while an agent's proposal waits)
      Coming up: <YYYY-MM-DD> (<Weekday>)       (only on a memory dated in the coming days)
    <blank>
    [002] …
    <blank>                                     (only before the two closing lines)
    Low priority, not shown in full (<L>): <key>, <key>, …
    <K> more memories left out; GET /memory/search finds them.   (over MCP: the search tool)

`N`, `X`, `Y` count the active (unexpired) memories that match the filters, shown or not (but
`after`/`before`: the counters know no time, so the header counts the selection without its window).
Content is split on every line break Unicode knows (`str.splitlines`) and each line indented,
so no content, tag or mind name can forge an unindented line such as a fake entry.

Budgets. `limit` caps the memories the text shows (entries in full plus keys named in the
summary line); `max_chars` caps the length of the whole text in characters (code points).
If every memory fits in full, all are shown and neither closing line appears. Otherwise:
1. Low-priority memories are summarised: the summary line gives how many there are (`L`)
   and names, in recall order, as many of their keys as the budgets leave room for after
   step 2; a trailing `…` means not all are named (`: …` when none are).
2. The others (critical, high, normal) are shown in full in recall order for as long as
   they fit beside the closing lines; the rest — the least important, then the least
   recently updated — are left out. An entry that does not fit ends the list (no later,
   smaller one jumps the queue), so a critical memory is never dropped while a less
   important one is shown. (When the last of the others fits only if every low key is
   named, which drops the left-out line, it is shown and all low keys are named.)
3. The last line counts every memory neither shown in full nor named (`K`), so shown +
   named + K = N: `1 more memory left out; GET /memory/search finds it.` in the singular.
Both closing lines are left out when they would say nothing (no low-priority memory; K = 0).

Recall for this moment (`q`): the memories most relevant to it (`relevant`, best first, found by
search) come right after the critical ones, whatever their priority, and are never summarised; the
rest follow in recall order without them. Critical memories stay first, so still never dropped
while anything less important is shown. Without `q` nothing changes.

Coming up (`coming`, `recall.coming_up`): the memories dated in the coming days (occurred_at, or a
date in their content) come right after the critical ones, soonest first, before those relevant
to `q`, each with a `Coming up:` line naming its date. A mind without such memories reads exactly
as without this rule (SPEC §4's example).
The caller passes lazy iterators in recall order and this module pulls only as many memories
as the answer can show (at most `limit` + 1), so reading stops when the budget is full.
`format=json` (`Recall.public`) carries exactly the same selection and order.
"""

from collections.abc import Iterator
from itertools import chain
from typing import Any, NamedTuple

from synapse.memory.counts import Tally
from synapse.memory.kinds import Memory
from synapse.recall.query import DEFAULT_LIMIT, MAX_CHARS, SEARCH_HINT

PENDING_LINE = "  (change proposed by an agent, pending review)"


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def header(name: str, total: int, verified: int) -> str:
    counts = f"{total} total ({verified} verified, {total - verified} unverified)"
    return f"Mind: {_one_line(name)}\nMemories: {counts}\n"


def event_date(occurred_at: str) -> str:
    """An occurred_at as the `On:` line shows it: a date as is, a timestamp to the minute in UTC."""
    if len(occurred_at) <= len("2026-12-09"):
        return occurred_at
    return f"{occurred_at[:10]} {occurred_at[11:16]} UTC"


def entry(number: int, memory: Memory, due: str | None = None) -> str:
    state = "verified" if memory.verified else "unverified"
    lines = [f"[{number:03d}] {memory.category} ({memory.priority.upper()}) [{state}]"]
    if not memory.key_derived:  # a key derived from the content would only repeat its first words
        lines.append(f"  {memory.key}")
    lines += [f"  {line}" for line in (memory.content.splitlines() or [""])]
    if memory.occurred_at and memory.occurred_at[:10] != due:  # a due day says it already
        lines.append(f"  On: {event_date(memory.occurred_at)}")
    if memory.tags:
        lines.append("  Tags: " + ", ".join(_one_line(tag) for tag in memory.tags))
    if memory.pending_proposal:
        lines.append(PENDING_LINE)
    if due is not None:
        lines.append(coming_up_line(due))
    return "\n".join(lines) + "\n"


def coming_up_line(day: str) -> str:
    """`  Coming up: 2026-12-09 (Wednesday)`: when a memory of the coming days is due."""
    from datetime import date

    return f"  Coming up: {day} ({date.fromisoformat(day).strftime('%A')})"


def summary_line(low_total: int, keys: list[str]) -> str:
    named = ", ".join(keys)
    if len(keys) < low_total:
        named = f"{named}, …" if named else "…"
    return f"Low priority, not shown in full ({low_total}): {named}"


def left_out_line(count: int, way_on: str = SEARCH_HINT) -> str:
    if count == 1:
        return f"1 more memory left out; {way_on} finds it."
    return f"{count} more memories left out; {way_on} finds them."


class Recall(NamedTuple):
    mind_id: str
    mind_name: str
    total: int
    verified: int
    memories: list[Memory]
    low_total: int
    low_keys: list[str]
    summarised: bool
    left_out: int
    text: str
    relevant: tuple[str, ...] = ()  # the ids of the memories shown for `q`, in order
    replaced: tuple[Memory, ...] = ()  # `include_superseded`: memories a newer one replaced (`replaced`)

    def public(self) -> dict[str, Any]:
        """`format=json`: the same selection and order as the text."""
        return {
            "mind": {"id": self.mind_id, "name": self.mind_name},
            "total": self.total,
            "verified": self.verified,
            "unverified": self.total - self.verified,
            "memories": [m.public() for m in self.memories],
            "low_priority": {"count": self.low_total, "keys": self.low_keys} if self.summarised else None,
            "left_out": self.left_out,
            "relevant": list(self.relevant),
            **({"replaced": [m.public() for m in self.replaced]} if self.replaced else {}),
        }


class _Text:
    """The text under construction: header, numbered entries, closing lines."""

    def __init__(
        self, head: str, total: int, low_total: int, summarised: bool, way_on: str, due: dict[str, str]
    ) -> None:
        self.head = head
        self.due = due
        self.way_on = way_on
        self.total = total
        self.low_total = low_total
        self.summarised = summarised
        self.blocks: list[str] = []
        self.size = len(head)

    def add(self, memory: Memory) -> None:
        block = "\n" + entry(len(self.blocks) + 1, memory, self.due.get(memory.id))
        self.blocks.append(block)
        self.size += len(block)

    def drop_last(self) -> None:
        self.size -= len(self.blocks.pop())

    def closing(self, keys: list[str]) -> str:
        lines = []
        if self.summarised:
            lines.append(summary_line(self.low_total, keys) + "\n")
        left = max(self.total - len(self.blocks) - len(keys), 0)
        if left:
            lines.append(left_out_line(left, self.way_on) + "\n")
        return "\n" + "".join(lines) if lines else ""

    def length(self, keys: list[str]) -> int:
        return self.size + len(self.closing(keys))

    def render(self, keys: list[str]) -> str:
        return self.head + "".join(self.blocks) + self.closing(keys)


def _after_critical(others: Iterator[Memory], relevant: list[Memory]) -> Iterator[Memory]:
    """`others` in recall order with the `relevant` memories put right after the critical ones."""
    placed = {m.id for m in relevant}
    pending = bool(relevant)
    for memory in others:
        if pending and memory.priority != "critical":
            yield from relevant
            pending = False
        if memory.id not in placed:
            yield memory
    if pending:
        yield from relevant


def compose(
    mind_id: str,
    mind_name: str,
    active: Tally,
    others: Iterator[Memory],
    low: Iterator[Memory],
    limit: int = DEFAULT_LIMIT,
    max_chars: int = MAX_CHARS,
    relevant: list[Memory] | None = None,
    way_on: str = SEARCH_HINT,
    coming: list[tuple[Memory, str]] | None = None,
) -> Recall:
    """The recall of a selection whose counts are `active`; `others` (critical to normal) and `low`
    yield its memories in recall order and are read no further than the answer needs; `relevant`
    (for `q`: non-critical memories of the selection, best first) are shown right after the critical,
    after those `coming` up (memory, its date), soonest first."""
    total = max(active.n, 0)
    verified = min(max(active.v, 0), total)
    head = header(mind_name, total, verified)
    due = {memory.id: day for memory, day in coming or []}
    dated = [memory for memory, _ in coming or [] if memory.priority != "critical"]
    pinned = dated + [m for m in relevant or [] if m.priority != "critical" and m.id not in due]
    # (critical ones stay in place)
    placed = {m.id for m in pinned}
    if pinned:
        others = _after_critical(others, pinned)
        low = (m for m in low if m.id not in placed)

    # Everything in full, if it fits: at most limit + 1 memories are read to find out.
    whole = _Text(head, total, 0, summarised=False, way_on=way_on, due=due)
    taken: list[Memory] = []
    for memory in chain(others, low):
        if len(taken) == limit:
            break
        whole.add(memory)
        if whole.size > max_chars:
            whole.drop_last()
            break
        taken.append(memory)
    else:
        text = whole.render([])
        return Recall(
            mind_id, mind_name, total, verified, taken, 0, [], False, 0, text, _shown(taken, placed)
        )
    pinned_low = sum(m.priority == "low" for m in pinned)
    summary = _summarise(
        head, active, total, [*taken, memory], others, low, limit, max_chars, placed, pinned_low, way_on, due
    )
    return Recall(mind_id, mind_name, total, verified, *summary, _shown(summary[0], placed))


def _shown(memories: list[Memory], placed: set[str]) -> tuple[str, ...]:
    return tuple(m.id for m in memories if m.id in placed)


def _summarise(
    head: str,
    active: Tally,
    total: int,
    read: list[Memory],
    others: Iterator[Memory],
    low: Iterator[Memory],
    limit: int,
    max_chars: int,
    placed: set[str],
    pinned_low: int,
    way_on: str,
    due: dict[str, str],
) -> tuple[list[Memory], int, list[str], bool, int, str]:
    """Not everything fits: summarise low priority, show the others in full while they fit.
    `read` is what the attempt in full took, plus the memory that did not fit; the `placed`
    (relevant) ones are shown in full whatever their priority, `pinned_low` of them low."""
    seen_low = [m for m in read if m.priority == "low" and m.id not in placed]
    more_others = [m for m in read if m.priority != "low" or m.id in placed]
    low_total = min(max(active.low - pinned_low, len(seen_low), 0), max(total, len(seen_low)))
    text = _Text(head, max(total, len(read)), low_total, summarised=low_total > 0, way_on=way_on, due=due)
    others_total = text.total - low_total
    low_seen = list(seen_low)

    def first_low(count: int) -> list[Memory]:
        while len(low_seen) < count and (more := next(low, None)) is not None:
            low_seen.append(more)
        return low_seen[:count]

    def every_low_key_fits() -> list[str] | None:
        """With every other memory shown, naming all low keys drops the left-out line: maybe shorter."""
        shown_count = len(text.blocks)
        if not text.summarised or shown_count != others_total or shown_count + low_total > limit:
            return None
        keys = [m.key for m in first_low(low_total)]
        return keys if len(keys) == low_total and text.length(keys) <= max_chars else None

    shown: list[Memory] = []
    candidates = chain(more_others, others)
    while len(shown) < limit and (candidate := next(candidates, None)) is not None:
        text.add(candidate)
        if text.length([]) > max_chars and every_low_key_fits() is None:
            text.drop_last()
            break
        shown.append(candidate)

    keys = every_low_key_fits() or []
    while text.summarised and len(keys) < low_total and len(shown) + len(keys) < limit:
        following = first_low(len(keys) + 1)
        if len(following) == len(keys) or text.length([*keys, following[-1].key]) > max_chars:
            break
        keys.append(following[-1].key)
    rendered = text.render(keys)
    if len(rendered) > max_chars:  # only below MIN_CHARS, which the API refuses
        rendered = rendered[:max_chars]
    left = max(text.total - len(shown) - len(keys), 0)
    return shown, low_total, keys, text.summarised, left, rendered
