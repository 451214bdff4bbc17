"""The outbound URL guard: where Synapse may POST webhook events.

A URL must be `https` and every address its host resolves to must be public: loopback, private,
link-local (cloud metadata lives there), shared/CGNAT, unique-local, site-local, multicast, reserved and
unspecified addresses are refused, in IPv4 and IPv6 alike, including IPv4 embedded in IPv6
(mapped, 6to4, NAT64, Teredo). The check runs at subscribe time and again before every delivery,
and the delivery connects to the very address that passed (see `delivery`), so a DNS answer that
changes between check and connect (rebinding) cannot reach an inside address.

Only the local runner and tests opt in to loopback (and plain http to loopback) with
`SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true`; nothing else is ever allowed.
"""

import ipaddress
import socket
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

from synapse.core.errors import Unprocessable, field_error

URL_MAX_CHARS = 2048
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Metadata endpoints outside the link-local range (which is refused whole anyway).
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("192.0.0.192"),  # Oracle Cloud
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


# What a refused loopback URL says: the one way to allow it, in a local run only.
LOOPBACK_HINT = (
    "for a receiver on this machine, start the local run with SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true make run"
)


class Refused(Exception):
    """The URL may not be called; `rule` names why (scheme, host, resolve, address)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message

    def as_field_error(self, field: str = "url") -> Unprocessable:
        return field_error(field, self.rule, self.message)


class Target(NamedTuple):
    """A URL that passed the guard, with the addresses it was checked against (connect to these)."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def why_forbidden(address: IPAddress, allow_loopback: bool = False) -> str | None:
    """None if Synapse may connect to `address`, else what kind of address it is."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "a scoped (link-local) address"
        inner = _embedded_ipv4(address)
        if inner is not None:
            reason = why_forbidden(inner, allow_loopback)
            return f"an IPv6 form of {reason}" if reason else None
    if address.is_loopback:
        return None if allow_loopback else "a loopback address"
    if address in _METADATA:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address"  # fec0::/10: Python counts it neither private nor non-global
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "a non-public address"
    return None


def parse(url: str, allow_loopback: bool = False) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an acceptable URL shape; no DNS yet."""
    if len(url) > URL_MAX_CHARS:
        raise Refused("length", f"must be at most {URL_MAX_CHARS} characters")
    if any(ord(ch) <= 32 or ord(ch) == 127 for ch in url):
        raise Refused("format", "must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise Refused("format", f"is not a valid URL ({error})") from None
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and allow_loopback):
        raise Refused("https", f"must be an https:// URL ({LOOPBACK_HINT}, which also allows http://)")
    if parts.username is not None or parts.password is not None:
        raise Refused("format", "must not carry a user name or password")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("format", "must name a host")
    if port == 0:
        raise Refused("port", "must name a port from 1 to 65535 (or none)")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # The request line is ASCII: other characters go percent-encoded as UTF-8 (escapes stay as sent).
    path = quote(path, safe="!#$%&'()*+,/:;=?@[]~")
    return scheme, host, port or (443 if scheme == "https" else 80), path


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [literal]
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Refused("resolve", f"host {host[:100]!r} does not resolve") from None
    found: list[IPAddress] = []
    for family, *_rest, sockaddr in answers:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        fields: tuple[Any, ...] = tuple(sockaddr)
        text = str(fields[0])
        scope = fields[3] if family == socket.AF_INET6 and len(fields) > 3 else 0
        address = ipaddress.ip_address(f"{text}%{scope}" if scope and "%" not in text else text)
        if address not in found:
            found.append(address)
    if not found:
        raise Refused("resolve", f"host {host[:100]!r} has no IPv4 or IPv6 address")
    return found


def check(url: str, allow_loopback: bool = False) -> Target:
    """The URL's target if every address it resolves to is public, else `Refused`.

    One forbidden address among several refuses the URL: a resolver may hand any of them out.
    Plain http is accepted only with the loopback opt-in, and only to loopback addresses.
    """
    scheme, host, port, path = parse(url, allow_loopback)
    addresses = _resolve(host, port)
    for address in addresses:
        reason = why_forbidden(address, allow_loopback)
        if reason:
            shown = host if host == str(address) else f"{host} resolves to {address}, which"
            hint = f" ({LOOPBACK_HINT})" if "loopback" in reason else ""
            raise Refused("address", f"{shown} is {reason}; webhooks go to public addresses only{hint}")
    if scheme == "http" and not all(a.is_loopback for a in addresses):
        raise Refused("https", "must be an https:// URL (plain http is for local loopback receivers only)")
    return Target(url, scheme, host, port, path, tuple(str(a) for a in addresses))
