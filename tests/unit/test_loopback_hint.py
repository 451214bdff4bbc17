"""A webhook URL refused for being on this machine says how to allow it in a local run."""

from __future__ import annotations

import pytest
from synapse.webhooks import ssrf

OPT_IN = "SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true make run"


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/hook", "https://127.0.0.1/hook", "https://[::1]/hook", "http://localhost/hook"],
)
def test_a_refused_loopback_url_says_how_to_allow_it_locally(url: str) -> None:
    # Given the default: no loopback opt-in
    # When a URL on this machine is checked
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.check(url)
    # Then the message names the opt-in
    assert OPT_IN in refused.value.message, refused.value.message


def test_a_private_address_gets_no_loopback_hint() -> None:
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.check("https://10.0.0.1/hook")
    assert "private address" in refused.value.message and OPT_IN not in refused.value.message
