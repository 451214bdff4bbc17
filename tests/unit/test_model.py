"""The memory model of SPEC §1, as pure code: field rules, defaults, and how writes merge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.core.errors import Unprocessable
from synapse.memory.changes import new_memory, patched, replaced, verified
from synapse.memory.kinds import CONTENT_MAX_BYTES, Source
from synapse.memory.model import EXPIRY_GRACE, MemoryPatch, MemoryWrite, MindWrite, StoredPatch

from tests.support.api import memory_body

AT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
LATER = AT + timedelta(minutes=5)
WRITTEN = AT - timedelta(days=1)


@pytest.fixture(autouse=True)
def written_before_at(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bodies of this file are checked a day before AT, whatever today is: their expiries are in
    the future, as a write's must be (issue 34 item 5)."""
    monkeypatch.setattr(clock, "now", lambda: WRITTEN)


def broken(body: dict[str, Any], model: type[Any] = MemoryWrite) -> list[tuple[str, str]]:
    """(field, rule) of every detail of the 422 that `body` earns."""
    with pytest.raises(Unprocessable) as caught:
        model.from_body(body)
    return [(d["field"], d["rule"]) for d in caught.value.details]


def write(**overrides: Any) -> MemoryWrite:
    return MemoryWrite.from_body(memory_body(**overrides))


# ---------------------------------------------------------------- key


@pytest.mark.parametrize("key", ["a", "home_city", "v2", "a1_b2_c3", "x" * 128, "2026_goals"])
def test_key_accepts_lowercase_snake_case_up_to_128_chars(key: str) -> None:
    assert write(key=key).key == key


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("", "length"),
        ("x" * 129, "length"),
        ("Home_city", "pattern"),
        ("home-city", "pattern"),
        ("home__city", "pattern"),
        ("_home", "pattern"),
        ("home_", "pattern"),
        ("home city", "pattern"),
        ("home_city\n", "pattern"),
        ("straße", "pattern"),
    ],
)
def test_key_outside_the_pattern_or_length_is_refused(key: str, rule: str) -> None:
    assert broken(memory_body(key=key)) == [("key", rule)]


# ---------------------------------------------------------------- content


def test_content_limit_is_32_kib_counted_in_utf8_bytes() -> None:
    # Given content of exactly 32 KiB of UTF-8, and content of fewer characters but more bytes
    exactly = "é" * (CONTENT_MAX_BYTES // 2)
    over_in_bytes = "é" * (CONTENT_MAX_BYTES // 2) + "x"
    # Then the first is accepted and the second refused, though it has only 16,385 characters
    assert write(content=exactly).content == exactly
    assert broken(memory_body(content=over_in_bytes)) == [("content", "size")]
    assert broken(memory_body(content="x" * (CONTENT_MAX_BYTES + 1))) == [("content", "size")]


def test_content_must_not_be_empty() -> None:
    assert broken(memory_body(content="")) == [("content", "length")]


def test_content_may_hold_any_text() -> None:
    text = "Zeile 1\nligne 2 — 行 3 🧠\tend\x00"
    assert write(content=text).content == text


# ---------------------------------------------------------------- tags


def test_tags_are_trimmed_lowercased_and_deduplicated_keeping_first_order() -> None:
    assert write(tags=["  Docker ", "swarm", "DOCKER", "Ops", "swarm"]).tags == ["docker", "swarm", "ops"]


def test_tags_default_to_an_empty_list() -> None:
    assert write().tags == []


def test_at_most_20_distinct_tags_counted_after_deduplication() -> None:
    twenty = [f"t{i}" for i in range(20)]
    assert write(tags=[*twenty, "T0", " t1 "]).tags == twenty
    assert broken(memory_body(tags=[*twenty, "t20"])) == [("tags", "max_items")]


@pytest.mark.parametrize("tag", ["", "   ", "x" * 65, "bad\x01tag"])
def test_each_tag_is_1_to_64_chars_of_text(tag: str) -> None:
    assert [field for field, _ in broken(memory_body(tags=["ok", tag]))] == ["tags"]


def test_a_64_char_tag_is_accepted() -> None:
    assert write(tags=["x" * 64]).tags == ["x" * 64]


def test_tags_must_be_a_list_of_strings() -> None:
    assert broken(memory_body(tags="docker")) == [("tags", "type")]
    assert broken(memory_body(tags=["ok", 7])) == [("tags[1]", "type")]


# ---------------------------------------------------------------- priority, confidence, category


def test_priority_defaults_to_normal_and_takes_the_four_levels() -> None:
    assert write().priority == "normal"
    for level in ("low", "normal", "high", "critical"):
        assert write(priority=level).priority == level
    assert broken(memory_body(priority="urgent")) == [("priority", "enum")]
    assert broken(memory_body(priority="HIGH")) == [("priority", "enum")]


def test_category_is_one_of_eight() -> None:
    for category in ("identity", "preference", "fact", "project", "skill", "mistake", "context", "note"):
        assert write(category=category).category == category
    assert broken(memory_body(category="hobby")) == [("category", "enum")]


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 1, 1.0])
def test_confidence_from_0_to_1(value: float) -> None:
    assert write(confidence=value).confidence == value


@pytest.mark.parametrize(
    ("value", "rule"), [(-0.01, "range"), (1.01, "range"), ("high", "type"), (True, "type")]
)
def test_confidence_outside_0_to_1_or_not_a_number_is_refused(value: Any, rule: str) -> None:
    assert broken(memory_body(confidence=value)) == [("confidence", rule)]


def test_confidence_defaults_by_source() -> None:
    # Given a write without confidence
    body = write()
    # Then a user's memory is stated (1.0) and an agent's inferred (0.7)
    assert new_memory("m_x", body, Source.USER, AT).confidence == 1.0
    assert new_memory("m_x", body, Source.AGENT, AT).confidence == 0.7
    # And a confidence the writer gives wins
    assert new_memory("m_x", write(confidence=0.5), Source.AGENT, AT).confidence == 0.5


def test_verified_by_source_on_creation() -> None:
    assert new_memory("m_x", write(), Source.USER, AT).verified is True
    assert new_memory("m_x", write(), Source.AGENT, AT).verified is False


# ---------------------------------------------------------------- expires_at


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-12-31T23:59:00Z", "2026-12-31T23:59:00.000Z"),
        ("2026-12-31T23:59:00+02:00", "2026-12-31T21:59:00.000Z"),
        ("2027-01-01T01:30:00.25-05:30", "2027-01-01T07:00:00.250Z"),
    ],
)
def test_expires_at_needs_a_time_zone_and_is_kept_in_utc_with_z(given: str, stored: str) -> None:
    assert write(expires_at=given).expires_at == stored


def test_a_stored_expiry_keeps_four_digit_years_before_the_year_1000() -> None:
    # Given an expiry a proposal holds (past ones too), in the first millennium
    # When it is read as a stored patch
    # Then its year has four digits, so text order stays time order
    held = StoredPatch.from_body({"expires_at": "0999-01-01T00:00:00Z"})
    assert held.expires_at == "0999-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("given", "rule"),
    [
        ("2026-12-31T23:59:00", "timezone"),
        ("2026-12-31", "timezone"),
        ("next tuesday", "format"),
        ("0001-01-01T00:00:00+01:00", "range"),
        (1767225540, "type"),
    ],
)
def test_expires_at_without_a_zone_or_not_a_timestamp_is_refused(given: Any, rule: str) -> None:
    assert broken(memory_body(expires_at=given)) == [("expires_at", rule)]


def test_expires_at_null_means_never() -> None:
    assert write(expires_at=None).expires_at is None


@pytest.mark.parametrize("model", [MemoryWrite, MemoryPatch])
@pytest.mark.parametrize(
    "given",
    ["2020-01-01T00:00:00Z", clock.to_iso(WRITTEN - EXPIRY_GRACE - timedelta(milliseconds=1))],
    ids=["years ago", "just beyond the grace"],
)
def test_a_write_with_an_expiry_in_the_past_is_refused_naming_the_field_and_rule(
    model: type[Any], given: str
) -> None:
    # Given a write whose expires_at lies further back than the grace (issue 34 item 5)
    body = memory_body(expires_at=given) if model is MemoryWrite else {"expires_at": given}
    # When its body is checked
    with pytest.raises(Unprocessable) as caught:
        model.from_body(body)
    # Then it is a 422 naming expires_at and the rule `future`, saying what to do instead
    assert [(d["field"], d["rule"]) for d in caught.value.details] == [("expires_at", "future")]
    assert caught.value.message.startswith("expires_at: is in the past")
    assert "give a future time" in caught.value.message


@pytest.mark.parametrize("ago", [timedelta(0), timedelta(seconds=30), EXPIRY_GRACE])
def test_an_expiry_now_or_within_the_grace_is_taken_as_now(ago: timedelta) -> None:
    # Given a write whose expiry is now or a moment before, as a client whose clock runs behind sends
    given = clock.to_iso(WRITTEN - ago)
    # When its body is checked, Then it is taken as written: the memory expires at once
    assert write(expires_at=given).expires_at == given
    assert MemoryPatch.from_body({"expires_at": given}).expires_at == given


def test_a_proposal_holds_its_expiry_once_it_has_passed() -> None:
    # Given an agent's proposed expiry, taken when it was made, and now long past
    # When it is read back as the proposal holds it (on accepting)
    # Then it is the same moment: the write was checked when it was made
    held = StoredPatch.from_body({"expires_at": "2020-01-01T00:00:00Z"})
    assert held.expires_at == "2020-01-01T00:00:00.000Z"


# ---------------------------------------------------------------- the body as a whole


def test_required_fields_and_unknown_fields() -> None:
    assert broken({}) == [("content", "required")]
    assert sorted(broken({"category": None, "key": None, "content": "x"})) == [
        ("category", "not_null"),
        ("key", "not_null"),
    ]
    assert broken(memory_body(colour="blue")) == [("colour", "unknown_field")]
    assert broken(memory_body(id="mem_mine")) == [("id", "unknown_field")]
    assert broken(memory_body(verified=True)) == [("verified", "unknown_field")]


def test_types_are_not_coerced() -> None:
    assert broken(memory_body(key=12)) == [("key", "type")]
    assert broken(memory_body(content=["x"])) == [("content", "type")]


def test_source_may_be_repeated_in_the_body_but_only_as_user_or_agent() -> None:
    assert write(source="agent").source is Source.AGENT
    assert broken(memory_body(source="system")) == [("source", "enum")]


def test_mind_name_is_1_to_100_chars_after_trimming() -> None:
    assert MindWrite.from_body({"name": "  Michael's Mind "}).name == "Michael's Mind"
    assert MindWrite.from_body({"name": "x" * 100}).name == "x" * 100
    assert broken({"name": "   "}, MindWrite) == [("name", "length")]
    assert broken({"name": "x" * 101}, MindWrite) == [("name", "length")]


def test_the_422_message_names_every_field() -> None:
    with pytest.raises(Unprocessable) as caught:
        MemoryWrite.from_body(memory_body(key="Bad Key", priority="urgent"))
    assert "key:" in caught.value.message and "priority:" in caught.value.message


# ---------------------------------------------------------------- replace and update


def stored(source: Source = Source.USER, **overrides: Any) -> Any:
    return new_memory("m_x", write(tags=["a"], **overrides), source, AT)


def test_replace_keeps_id_and_created_at_and_follows_the_new_write() -> None:
    # Given a stored memory
    old = stored(priority="high", expires_at="2030-01-01T00:00:00Z")
    # When it is stored again with the same key
    new = replaced(old, write(content="Lives in Hamburg", confidence=0.9), Source.USER, LATER)
    # Then identity and birth stay, the rest follows the write, and the version moves on
    assert (new.id, new.created_at) == (old.id, old.created_at)
    assert (new.content, new.tags, new.priority, new.confidence, new.expires_at) == (
        "Lives in Hamburg",
        [],
        "normal",
        0.9,
        None,
    )
    assert new.version == 2 and new.updated_at == "2026-01-02T03:09:05.678Z"


def test_an_agent_changing_a_verified_memory_leaves_it_unverified() -> None:
    old = verified(stored(), "user-1", AT)
    for change in (write(content="Lives in Hamburg"), write(tags=["b"])):
        new = replaced(old, change, Source.AGENT, LATER)
        assert (new.verified, new.source, new.verified_at, new.verified_by) == (False, "agent", None, None)


def test_an_agent_restoring_identical_content_and_tags_keeps_it_verified() -> None:
    old = verified(stored(), "user-1", AT)
    new = replaced(old, write(tags=["A "], priority="high", confidence=1.0), Source.AGENT, LATER)
    assert (new.verified, new.verified_by) == (True, "user-1")
    assert new.source == "agent" and new.version == old.version + 1
    # At an agent's default confidence (0.7, below the person's 1.0) it demotes the memory: applied
    # (a mind set to `unverify`; otherwise it is a proposal), it leaves the memory unverified
    assert replaced(old, write(tags=["A "]), Source.AGENT, LATER).verified is False


def test_a_user_write_is_verified() -> None:
    old = stored(Source.AGENT)
    assert old.verified is False
    assert replaced(old, write(content="new"), Source.USER, LATER).verified is True


def test_patch_changes_only_what_it_names_and_null_expiry_clears() -> None:
    old = stored(priority="high", expires_at="2030-01-01T00:00:00Z")
    new = patched(old, MemoryPatch.from_body({"confidence": 0.4, "expires_at": None}), Source.USER, LATER)
    assert (new.content, new.tags, new.priority) == (old.content, old.tags, "high")
    assert (new.confidence, new.expires_at, new.version) == (0.4, None, 2)
    kept = patched(old, MemoryPatch.from_body({"content": "x"}), Source.USER, LATER)
    assert kept.expires_at == "2030-01-01T00:00:00.000Z"


def test_patch_by_agent_of_content_or_a_demotion_unverifies_and_a_raise_does_not() -> None:
    old = verified(stored(), "user-1", AT)
    assert patched(old, MemoryPatch.from_body({"priority": "high"}), Source.AGENT, LATER).verified is True
    assert patched(old, MemoryPatch.from_body({"priority": "low"}), Source.AGENT, LATER).verified is False
    assert patched(old, MemoryPatch.from_body({"content": "y"}), Source.AGENT, LATER).verified is False


@pytest.mark.parametrize("field", ["category", "key"])
def test_category_and_key_are_immutable(field: str) -> None:
    old = stored()
    other = {"category": "note", "key": "other_key"}[field]
    with pytest.raises(Unprocessable) as caught:
        patched(old, MemoryPatch.from_body({field: other}), Source.USER, LATER)
    assert caught.value.details == [
        {"field": field, "rule": "immutable", "message": "cannot be changed after creation"}
    ]
    # Sending the current value is harmless
    same = getattr(old, field)
    assert patched(old, MemoryPatch.from_body({field: same}), Source.USER, LATER).version == 2


@pytest.mark.parametrize("field", ["content", "tags", "priority", "confidence"])
def test_patch_may_not_null_a_field_that_null_would_not_clear(field: str) -> None:
    assert broken({field: None}, MemoryPatch) == [(field, "not_null")]


def test_patch_may_clear_the_expiry_with_null() -> None:
    patch = MemoryPatch.from_body({"expires_at": None})
    assert patch.expires_at is None and patch.sent == {"expires_at"}


def test_verify_records_who_and_when() -> None:
    new = verified(stored(Source.AGENT), "user-9", LATER)
    assert (new.verified, new.verified_by, new.verified_at) == (True, "user-9", "2026-01-02T03:09:05.678Z")


def test_public_json_uses_specs_field_names_and_reports_expiry() -> None:
    memory = stored(expires_at="2026-01-02T03:04:05Z")
    public = memory.public(at=LATER)
    assert {
        "id",
        "mind_id",
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "source",
        "verified",
        "confidence",
        "expires_at",
        "created_at",
        "updated_at",
        "version",
    } <= set(public)
    assert public["expired"] is True
    assert memory.public(at=AT - timedelta(days=1))["expired"] is False
