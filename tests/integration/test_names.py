"""A mind's name and a key's or hook's label follow a tag's rule (issue 21): trimmed, then 1-100
characters with no control character (C0 or DEL), or a 422 naming the field; and the OpenAPI
pattern for them accepts exactly the same strings."""

from __future__ import annotations

import random
import re

import pytest
from synapse.core import validation
from synapse.core.validation import Invalid, trimmed_text, trimmed_text_pattern

from tests.support.api import Api, jwt_for
from tests.support.checks import assert_error

CONTROLLED = ["My\x00Mind", "Tab\there", "Two\nlines", "Bell\x07", "Delete\x7f", "Esc\x1b[31m", "Unit\x1fsep"]


@pytest.mark.parametrize("name", CONTROLLED)
def test_a_name_with_a_control_character_is_a_422(api: Api, name: str) -> None:
    # When a mind is created or renamed with a control character inside its name
    created = api.call("POST", "/minds", token=jwt_for("namer"), json_body={"name": name})
    # Then it is refused, naming the field and the rule (tags' own rule: "characters")
    assert_error(created, 422, field="name", rule="characters")
    mind = api.create_mind("namer", "Kept")
    renamed = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": name})
    assert_error(renamed, 422, field="name", rule="characters")
    assert api.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["name"] == "Kept"


@pytest.mark.parametrize("path", ["/minds/{mind}/keys", "/minds/{mind}/hooks"])
def test_a_label_with_a_control_character_is_a_422(api: Api, path: str) -> None:
    mind = api.create_mind("labeller", "Labels")
    answer = api.call("POST", path.format(mind=mind.id), token=mind.jwt, json_body={"label": "ci\x00bot"})
    assert_error(answer, 422, field="label", rule="characters")


def test_surrounding_whitespace_is_trimmed_as_before(api: Api) -> None:
    # Whitespace around the name (a trailing newline from a shell, say) is not part of it, as for tags
    answer = api.call("POST", "/minds", token=jwt_for("namer"), json_body={"name": "\t My Mind\n"})
    assert answer.status == 201, answer.text
    assert answer.json()["mind"]["name"] == "My Mind"


def test_the_whitespace_the_pattern_names_is_what_strip_removes() -> None:
    every = "".join(map(chr, range(0x110000)))
    spaces = re.findall(f"[{validation.SPACE}]", every)
    assert spaces == [c for c in every if c.isspace()]


def test_the_pattern_accepts_exactly_what_the_rule_accepts() -> None:
    # Given random strings over the characters where the two could part: whitespace that is a control
    # character or not, controls, DEL, C1, the BOM (whitespace in some regex dialects, not to strip())
    alphabet = ["a", "é", " ", "\t", "\n", "\x0b", "\x1c", "\x1f", "\x00", "\x7f", "\x85", "\x9b"]
    alphabet += ["\xa0", "\u2028", "\u3000", "\ufeff", "😀"]
    pattern = re.compile(trimmed_text_pattern(6))
    chosen = random.Random(21)
    for _ in range(30_000):
        text = "".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 10)))
        try:
            trimmed_text(text, 6)
            accepted = True
        except Invalid:
            accepted = False
        # Then the pattern says yes exactly when the rule does
        assert accepted == bool(pattern.search(text)), repr(text)
    assert re.search(trimmed_text_pattern(1), " x ") and not re.search(trimmed_text_pattern(1), "xy")
