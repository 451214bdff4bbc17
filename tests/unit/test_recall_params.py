"""The `within` of GET /memory/expiring: an integer and a unit, at most 365 days; nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from synapse.api.queries import parse_within
from synapse.core.errors import BadRequest


@pytest.mark.parametrize(
    ("text", "window"),
    [
        (None, timedelta(days=7)),
        ("30m", timedelta(minutes=30)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("365d", timedelta(days=365)),
        ("8760h", timedelta(days=365)),
    ],
)
def test_accepted_forms(text: str | None, window: timedelta) -> None:
    assert parse_within(text) == window


@pytest.mark.parametrize(
    "text",
    [
        "366d",
        "53w",
        "525601m",
        "0m",
        "07d",
        "d",
        "7",
        "7 d",
        "7D",
        "\uff11d",
        "\u0667d",
        "1e3m",
        "9" * 40 + "d",
    ],
)
def test_anything_else_is_a_400_naming_the_accepted_form(text: str) -> None:
    with pytest.raises(BadRequest) as raised:
        parse_within(text)
    assert raised.value.message.startswith("within: must be a whole number followed by m, h, d or w")
    assert raised.value.details[0]["field"] == "within"
