"""SSRF through the API: inside URLs are refused with a clear 422 at subscribe time, again at
delivery after DNS, and a delivery connects to the very address it checked (DNS rebinding)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from synapse.webhooks import ssrf, transport

from tests.support.api import Api
from tests.support.checks import assert_error
from tests.support.receiver import Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

EVENTS = ["memory.created"]
REAL_GETADDRINFO = socket.getaddrinfo


def resolve_hosts(monkeypatch: pytest.MonkeyPatch, table: dict[str, str]) -> list[str]:
    """Hostnames in `table` resolve to its address; returns the log of names looked up."""
    looked_up: list[str] = []

    def fake(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(host)
        if host in table:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (table[host], port))]
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return looked_up


@pytest.mark.parametrize(
    ("url", "rule", "says"),
    [
        ("http://hooks.example.com/synapse", "https", "https://"),
        ("https://127.0.0.1/synapse", "address", "127.0.0.1 is a loopback address"),
        ("https://10.0.0.1/synapse", "address", "10.0.0.1 is a private address"),
        (
            "https://169.254.169.254/latest/meta-data/",
            "address",
            "169.254.169.254 is a cloud metadata address",
        ),
        ("https://[::1]/synapse", "address", "::1 is a loopback address"),
        ("https://internal.example.com/synapse", "address", "internal.example.com resolves to 10.20.30.40"),
    ],
)
def test_inside_urls_are_refused_with_a_clear_422(
    api: Api, monkeypatch: pytest.MonkeyPatch, url: str, rule: str, says: str
) -> None:
    # Given a hostname that resolves to a private address
    resolve_hosts(monkeypatch, {"internal.example.com": "10.20.30.40"})
    mind = api.create_mind()
    # When the owner subscribes the URL
    answer = api.call(
        "POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body={"url": url, "events": EVENTS}
    )
    # Then it is a 422 naming the url, the rule and the reason
    error = assert_error(answer, 422, field="url", rule=rule)
    assert says in error["message"], error["message"]
    # And nothing was subscribed
    assert api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt).json()["webhooks"] == []


def test_a_patch_to_an_inside_url_is_refused_and_changes_nothing(
    api: Api, configure: Configure, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolve_hosts(monkeypatch, {"hooks.example.com": "93.184.215.14"})
    mind = api.create_mind()
    created = api.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={"url": "https://hooks.example.com/in", "events": EVENTS},
    )
    assert created.status == 201, created.text
    path = f"/minds/{mind.id}/webhooks/{created.json()['id']}"
    answer = api.call("PATCH", path, token=mind.jwt, json_body={"url": "https://169.254.169.254/latest/"})
    assert_error(answer, 422, field="url", rule="address")
    listed = api.call("GET", f"/minds/{mind.id}/webhooks", token=mind.jwt).json()["webhooks"]
    assert [w["url"] for w in listed] == ["https://hooks.example.com/in"]


@pytest.mark.parametrize("url", ["https://10.0.0.1/in", "https://169.254.169.254/in", "http://10.0.0.1/in"])
def test_the_loopback_opt_in_opens_loopback_only(api: Api, configure: Configure, url: str) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    mind = api.create_mind()
    answer = api.call(
        "POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body={"url": url, "events": EVENTS}
    )
    assert_error(answer, 422, field="url")


def test_a_host_that_rebinds_to_an_inside_address_is_refused_at_delivery(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a webhook whose host resolved to a public address when it subscribed
    names = {"rebind.example.com": "93.184.215.14"}
    resolve_hosts(monkeypatch, names)
    mind = api.create_mind()
    created = api.call(
        "POST",
        f"/minds/{mind.id}/webhooks",
        token=mind.jwt,
        json_body={"url": "https://rebind.example.com/", "events": EVENTS},
    ).json()
    # When its DNS now answers with the metadata address, and a ping is sent
    names["rebind.example.com"] = "169.254.169.254"
    connected: list[Any] = []
    monkeypatch.setattr(transport, "_connect", lambda *a, **k: connected.append(a))
    answer = api.call("POST", f"/minds/{mind.id}/webhooks/{created['id']}/test", token=mind.jwt)
    # Then the delivery is refused after resolving, without a connection
    assert answer.status == 200 and answer.json()["delivered"] is False
    assert "169.254.169.254" in answer.json()["error"] and answer.json()["error"].startswith("refused")
    assert connected == []


def test_a_delivery_connects_to_the_address_it_checked_and_keeps_the_host_name(
    configure: Configure, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a target checked while its name resolved to the receiver on loopback
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")
    port = receiver.server.server_address[1]
    names = {"agent.example.com": "127.0.0.1"}
    looked_up = resolve_hosts(monkeypatch, names)
    target = ssrf.check(f"http://agent.example.com:{port}/events", allow_loopback=True)
    # When the name now points elsewhere (a rebinding resolver) and the POST goes out
    names["agent.example.com"] = "10.0.0.1"
    status = transport.post(target, b'{"id":"evt_1"}', {"Content-Type": "application/json"})
    # Then it reached the checked address without asking DNS again, Host header intact
    assert status == 200 and looked_up == ["agent.example.com"]
    got = receiver.got("/events")
    assert (
        len(got) == 1
        and got[0].headers["host"] == f"agent.example.com:{port}"
        and got[0].body == b'{"id":"evt_1"}'
    )
