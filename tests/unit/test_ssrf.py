"""The outbound URL guard: scheme, shape, and every kind of address a webhook may not reach."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest
from synapse.webhooks import ssrf


def resolves_to(monkeypatch: pytest.MonkeyPatch, *addresses: str) -> None:
    """Make every hostname resolve to these addresses (no real DNS in tests)."""

    def fake(host: str, port: Any, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        answers: list[tuple[Any, ...]] = []
        for text in addresses:
            if ":" in text:
                answers.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (text, port, 0, 0)))
            else:
                answers.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (text, port)))
        return answers

    monkeypatch.setattr(socket, "getaddrinfo", fake)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("fd00:ec2::254", "metadata"),
        ("fc00::1", "private"),
        ("fec0::1", "site-local"),  # deprecated (RFC 3879), yet still routed inside some networks
        ("100.64.0.1", "non-public"),
        ("100.100.100.200", "metadata"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address to refuse, not to bind
        ("::", "unspecified"),
        ("240.0.0.1", "private"),  # Python files 240/4 under private as well as reserved
        ("255.255.255.255", "private"),
        ("192.0.2.10", "private"),
        ("::ffff:127.0.0.1", "IPv6 form of a loopback"),
        ("::ffff:10.0.0.1", "IPv6 form of a private"),
        ("::ffff:169.254.169.254", "IPv6 form of a cloud metadata"),
        ("2002:a00:1::", "IPv6 form of a private"),  # 6to4 around 10.0.0.1
        ("64:ff9b::a9fe:a9fe", "IPv6 form of a cloud metadata"),  # NAT64 around 169.254.169.254
    ],
)
def test_inside_addresses_are_forbidden(address: str, kind: str) -> None:
    reason = ssrf.why_forbidden(ipaddress.ip_address(address))
    assert reason is not None and kind in reason, reason


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "64:ff9b::808:808"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert ssrf.why_forbidden(ipaddress.ip_address(address)) is None


def test_the_loopback_opt_in_allows_loopback_and_nothing_else() -> None:
    allowed = [ssrf.why_forbidden(ipaddress.ip_address(a), allow_loopback=True) for a in ("127.0.0.1", "::1")]
    assert allowed == [None, None]
    assert ssrf.why_forbidden(ipaddress.ip_address("::ffff:127.0.0.1"), allow_loopback=True) is None
    for inside in ("10.0.0.1", "169.254.169.254", "fd00::1", "0.0.0.0"):  # noqa: S104
        assert ssrf.why_forbidden(ipaddress.ip_address(inside), allow_loopback=True) is not None


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://hooks.example.com/x", "https"),
        ("ftp://hooks.example.com/x", "https"),
        ("hooks.example.com/x", "https"),
        ("https://user:pw@hooks.example.com/x", "format"),
        ("https:///x", "format"),
        ("https://hooks.example.com:99999/x", "format"),
        ("https://hooks.example.com:0/x", "port"),
        ("https://hooks.example.com/a b", "format"),
        ("https://hooks.example.com/" + "a" * 2100, "length"),
    ],
)
def test_malformed_or_plain_http_urls_are_refused_before_any_dns(url: str, rule: str) -> None:
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.parse(url)
    assert refused.value.rule == rule


def test_a_hostname_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    resolves_to(monkeypatch, "10.1.2.3")
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.check("https://internal.example.com/hook")
    assert refused.value.rule == "address"
    assert "internal.example.com resolves to 10.1.2.3" in refused.value.message
    assert "private" in refused.value.message


def test_one_inside_address_among_public_ones_refuses_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    resolves_to(monkeypatch, "93.184.215.14", "::ffff:169.254.169.254")
    with pytest.raises(ssrf.Refused):
        ssrf.check("https://mixed.example.com/hook")


def test_a_public_host_passes_with_the_addresses_it_was_checked_against(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    resolves_to(monkeypatch, "93.184.215.14", "2606:4700:4700::1111")
    target = ssrf.check("https://hooks.example.com:8443/in?x=1")
    assert (target.scheme, target.host, target.port, target.path) == (
        "https",
        "hooks.example.com",
        8443,
        "/in?x=1",
    )
    assert target.addresses == ("93.184.215.14", "2606:4700:4700::1111")


def test_a_host_that_does_not_resolve_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror("Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.check("https://nowhere.invalid/hook")
    assert refused.value.rule == "resolve"


def test_plain_http_needs_the_opt_in_and_a_loopback_target(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ssrf.check("http://127.0.0.1:8080/hook", allow_loopback=True).addresses == ("127.0.0.1",)
    with pytest.raises(ssrf.Refused):
        ssrf.check("http://127.0.0.1:8080/hook")
    resolves_to(monkeypatch, "93.184.215.14")
    with pytest.raises(ssrf.Refused) as refused:
        ssrf.check("http://hooks.example.com/hook", allow_loopback=True)
    assert refused.value.rule == "https"
