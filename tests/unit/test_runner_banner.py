"""The start banner of `make run` names the MCP endpoint and how to authenticate to it, says whether
webhooks may be delivered to this machine, and how to turn that on; it points at `make demo` unless
the demo is being seeded."""

from __future__ import annotations

import pytest

from infra.local_runner import banner
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

URL = "http://127.0.0.1:3000"


def test_the_banner_says_loopback_delivery_is_off_and_how_to_turn_it_on(configure: Configure) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=None)
    text = banner(URL, "a.jwt.token", "moto")
    assert (
        "Webhook delivery to loopback: off (start with SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true make run" in text
    )
    assert "make demo" in text


def test_the_banner_says_loopback_delivery_is_on(
    configure: Configure, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    monkeypatch.setenv("SYNAPSE_DEMO", "1")
    text = banner(URL, "a.jwt.token", "moto")
    assert "Webhook delivery to loopback: on" in text
    assert "make demo" not in text  # the demo is being seeded: its own lines follow


def test_the_banner_names_the_mcp_endpoint_and_how_to_authenticate(configure: Configure) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=None)
    # Given the runner on its URL
    # When its banner is printed
    lines = banner(URL, "a.jwt.token", "moto").splitlines()
    # Then one line names <url>/mcp with both ways in: a Mind Key as Bearer, or OAuth
    (mcp,) = [line for line in lines if line.startswith("MCP: ")]
    assert mcp.startswith(f"MCP: {URL}/mcp ")
    assert "Mind Key as Authorization: Bearer mk_" in mcp and "OAuth" in mcp
