"""How recall splits one read in recall order into `others` and `low` (`recall.streams._Split`)."""

from __future__ import annotations

from collections.abc import Iterator

from synapse.memory.kinds import Memory
from synapse.recall.streams import _Split

from tests.support.memories import a_memory


def _pair(rank: int, key: str) -> tuple[str, Memory]:
    return f"{rank}#0000#{key}", a_memory("m_x", key=key)


class Read:
    """Pages of a read, counted as they are asked for, and a separate read of the low ones."""

    def __init__(self, *pages: list[tuple[str, Memory]]) -> None:
        self.pages, self.read, self.apart = pages, 0, 0

    def chunks(self) -> Iterator[tuple[list[tuple[str, Memory]], bool]]:
        for number, page in enumerate(self.pages):
            self.read += 1
            yield page, number == len(self.pages) - 1

    def low_apart(self) -> Iterator[Memory]:
        self.apart += 1
        return iter([a_memory("m_x", key="apart")])


def _keys(memories: Iterator[Memory]) -> list[str]:
    return [m.key for m in memories]


def test_a_read_holding_the_whole_selection_answers_both_streams() -> None:
    # Given one page with critical, normal and low memories
    read = Read([_pair(0, "c"), _pair(2, "n"), _pair(3, "l1"), _pair(3, "l2")])
    split = _Split(read.chunks(), read.low_apart)
    # When both streams are read, others first
    others, low = _keys(split.others()), _keys(split.low())
    # Then each has its own, from the one page, and no separate read of the low ones
    assert (others, low) == (["c", "n"], ["l1", "l2"]) and (read.read, read.apart) == (1, 0)


def test_low_asked_for_before_the_read_reaches_it_is_read_apart() -> None:
    # Given a read of two pages whose first holds only others
    read = Read([_pair(1, "h1"), _pair(1, "h2")], [_pair(2, "n"), _pair(3, "l")])
    split = _Split(read.chunks(), read.low_apart)
    others = split.others()
    # When the answer takes one other, then asks for low
    first, low = next(others), _keys(split.low())
    # Then low is read apart, without reading the second page for it, and others still ends at low
    assert (first.key, low, read.read) == ("h1", ["apart"], 1)
    assert _keys(others) == ["h2", "n"] and read.apart == 1


def test_low_asked_for_when_a_page_already_read_holds_it_shares_the_read() -> None:
    # Given a first page holding others and the first low ones, and more pages after
    read = Read([_pair(0, "c"), _pair(3, "l1")], [_pair(3, "l2")])
    split = _Split(read.chunks(), read.low_apart)
    others = split.others()
    # When the answer takes one other and then the low ones
    first, low = next(others), _keys(split.low())
    # Then low continues the same read from the first low memory
    assert (first.key, low, read.apart) == ("c", ["l1", "l2"], 0) and _keys(others) == []


def test_a_read_that_ended_without_low_memories_has_none() -> None:
    read = Read([_pair(0, "c")])
    split = _Split(read.chunks(), read.low_apart)
    assert (_keys(split.others()), _keys(split.low()), read.apart) == (["c"], [], 0)
