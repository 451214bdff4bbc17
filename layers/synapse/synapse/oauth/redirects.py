"""Redirect URIs: what registration accepts, what an authorization request may name, and the
`Location` built from them (RFC 6749 §3.1.2, RFC 8252 §7.3).

One reader for both. A browser and Python do not read every string alike: `urlsplit` drops TAB, CR
and LF anywhere and spaces at either end, and takes `\\` as part of the authority where a browser
takes it for `/` (`http://127.0.0.2:9999\\@127.0.0.1/cb` is 127.0.0.1 to Python, 127.0.0.2 to a
browser). So a URI with a control character, a space, a backslash, credentials or a fragment is
refused before it is parsed at all, registered or requested; what passes is split into its parts,
and a `Location` is rebuilt from those parts (the query kept, what RFC 3986 does not allow
percent-encoded, our parameters added), never copied from the request."""

import re
import unicodedata
from typing import Any, NamedTuple
from urllib.parse import SplitResult, quote, urlencode, urlsplit, urlunsplit

MAX_URI_CHARS = 2000
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]", "localhost"})
# A name of letters, digits, dots and hyphens, or an IP literal (urlsplit gives the host of `[::1]`
# as `::1`): nothing with a space, a second bracket or other text. The same host the OpenAPI
# document's REDIRECT_URI pattern allows, so a URI it calls valid is accepted (test_oauth samples it).
_HOST = re.compile(r"[a-z0-9.-]+|[0-9a-f:.]{2,45}")
# What RFC 3986 allows in a path or query stays as written in a rebuilt Location (existing %-escapes
# too); anything else (`"<>^`{|}` and non-ASCII letters, once the checks passed) is percent-encoded
# as UTF-8, as a browser would before sending it.
_KEPT = "-._~:/?[]@!$&'()*+,;=%"
# What a redirect URI may not contain, as a regular expression class (the OpenAPI document's pattern
# uses it too): `#`, `\`, the control characters (Unicode's Cc: C0, DEL, C1) and every character
# Python calls a space. `_character_rule` names which rule a refused one breaks.
REFUSED = r"#\\\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_REFUSED = re.compile(f"[{REFUSED}]")


class RedirectRefused(ValueError):
    """Why a string is not a usable redirect URI: the rule, for the caller to name its field."""


class RedirectUri(NamedTuple):
    """A checked redirect URI, in the parts a Location is rebuilt from."""

    scheme: str
    host: str  # lower case; an IPv6 literal in brackets
    port: int | None
    path: str
    query: str

    @property
    def loopback(self) -> bool:
        return self.scheme == "http" and self.host in LOOPBACK_HOSTS

    @property
    def netloc(self) -> str:
        return self.host + (f":{self.port}" if self.port is not None else "")

    def same_except_port(self, other: "RedirectUri") -> bool:
        return (self.scheme, self.host, self.path, self.query) == (
            other.scheme,
            other.host,
            other.path,
            other.query,
        )

    def location(self, params: dict[str, str]) -> str:
        """This URI with `params` added to its query (a registered query is kept, RFC 6749 §3.1.2)."""
        query = "&".join(part for part in (quote(self.query, safe=_KEPT), urlencode(params)) if part)
        return urlunsplit((self.scheme, self.netloc, quote(self.path, safe=_KEPT), query, ""))


def _character_rule(value: str) -> str | None:
    if not _REFUSED.search(value):
        return None
    if any(unicodedata.category(char) == "Cc" for char in value):
        return "contains a control character (CR, LF, TAB, NUL or another)"
    if any(char.isspace() for char in value):
        return "contains a space (leading, trailing or inside)"
    if "\\" in value:
        return "contains a backslash (a browser reads it as /)"
    return "must not have a fragment"


def _authority(parts: SplitResult) -> tuple[str, int | None] | None:
    """The host (bracketed if IPv6, lower case) and port, if the authority is exactly those:
    `https://[::1]x/` or `https://a b/` is not."""
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    port = parts.port
    written = shown + (f":{port}" if port is not None else "")
    if not _HOST.fullmatch(host) or parts.netloc.lower() != written:
        return None
    return shown, port


def check(value: Any) -> RedirectUri:
    """The parts of a usable redirect URI, or RedirectRefused naming the rule it breaks."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_URI_CHARS:
        raise RedirectRefused(f"each must be a URL of 1-{MAX_URI_CHARS} characters")
    shown = repr(value[:100])
    rule = _character_rule(value)
    if rule:
        raise RedirectRefused(f"{shown} {rule}")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise RedirectRefused(f"{shown} is not a URL") from None
    if "@" in parts.netloc:
        raise RedirectRefused(f"{shown} must not carry credentials (user@host)")
    authority = _authority(parts)
    if authority is None:
        raise RedirectRefused(f"{shown} has no valid host")
    checked = RedirectUri(parts.scheme, authority[0], authority[1], parts.path, parts.query)
    if checked.scheme != "https" and not checked.loopback:
        raise RedirectRefused(
            f"{shown} must be https, or http on a loopback address (127.0.0.1, [::1], localhost)"
        )
    return checked


def usable(value: Any) -> RedirectUri | None:
    """`check` for a stored value: one registration would now refuse is unusable, not an error."""
    try:
        return check(value)
    except RedirectRefused:
        return None


def matching(registered: dict[str, RedirectUri], asked: str) -> RedirectUri | None:
    """The registered URI a requested one names: the same string (RFC 6749 §3.1.2.3), or a loopback
    one that differs only in its port (RFC 8252 §7.3), with the requested port; else None. `asked`
    passes `check` first (RedirectRefused), so a string Python and a browser read apart never
    reaches the comparison."""
    target = check(asked)
    if asked in registered:
        return registered[asked]
    if target.loopback:
        for known in registered.values():
            if known.loopback and known.same_except_port(target):
                return target
    return None
