"""Malformed input for the doors that read it themselves (issue 40 item 3): the OAuth endpoints'
JSON and form bodies, their query strings and HTTP Basic credentials, the consent endpoints, and
restore's lines. Each probe is one request; none may be answered with a 5xx. The same probes run
in process (tests/integration/test_malformed_input.py) and over HTTP (bench/attacks.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from tests.support.api import Api, MindHandle

JSON = {"content-type": "application/json"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
NDJSON = {"content-type": "application/x-ndjson"}

# JSON text of values of every type and of text JSON can carry but UTF-8 cannot (raw escapes).
VALUES = {
    "lone high surrogate": r'"\ud800"',
    "lone low surrogate": r'"\udfff"',
    "surrogate inside text": r'"a\udbffb"',
    "NUL": r'"\u0000"',
    "empty text": '""',
    "5,000 characters": json.dumps("x" * 5000),
    "non-ASCII": json.dumps("é☃𝄞"),
    "null": "null",
    "true": "true",
    "zero": "0",
    "negative": "-1",
    "fraction": "0.5",
    "huge number": "1" + "0" * 400,
    "1e999": "1e999",
    "NaN": "NaN",
    "empty list": "[]",
    "list": '["a", 1]',
    "object": '{"a": "b"}',
    "deep": "[" * 40 + "]" * 40,
}
BODIES = {  # whole bodies that are not a JSON object of text
    "not UTF-8": b"\xff\xfe\xfd",
    "cut short": b'{"grant_type": "authorization_code", "code": "a',
    "a list": b'["grant_type", "authorization_code"]',
    "text": b'"authorization_code"',
    "null": b"null",
    "a key twice": b'{"client_id": "a", "client_id": "b"}',
    "a surrogate key": b'{"\\ud800": "x"}',
    "NUL": b"\x00",
    "deep": b'{"a":' * 40 + b"1" + b"}" * 40,
}
FORMS = {
    "surrogate bytes": b"code=%ED%A0%80&grant_type=authorization_code",
    "not UTF-8": b"code=%FF%FE&grant_type=authorization_code",
    "raw bytes": b"code=\xff\xfe&grant_type=authorization_code",
    "a field twice": b"client_id=a&client_id=b",
    "lone percent": b"code=%&grant_type=%",
    "NUL": b"code=%00&grant_type=refresh_token&refresh_token=%00",
    "empty names": b"=&=&&",
    "5,000 characters": b"code=" + b"x" * 5000,
    "grant type list": b"grant_type[]=refresh_token",
}
BASIC = {
    "non-ASCII": "Basic é",
    "latin-1 bytes": "Basic \xff\xfe",
    "padding only": "Basic ====",
    "not base64": "Basic !!!",
    "not UTF-8 once decoded": "Basic " + base64.b64encode(b"\xff\xfe:secret").decode(),
    "surrogate percent-encoded": "Basic " + base64.b64encode(b"%ED%A0%80:secret").decode(),
    "no colon": "Basic " + base64.b64encode(b"client").decode(),
    "empty id": "Basic " + base64.b64encode(b":").decode(),
    "10,000-character id": "Basic " + base64.b64encode(b"c" * 10_000 + b":").decode(),
    "NUL id": "Basic " + base64.b64encode(b"\x00:\x00").decode(),
    "scheme alone": "Basic",
    "lowercase scheme": "basic Zm9vOmJhcg==",
    "two spaces": "Basic  Zm9vOmJhcg==",
    "Bearer non-ASCII": "Bearer é",
}
QUERY_VALUES: dict[str, Any] = {
    "surrogate bytes": b"\xed\xa0\x80",
    "not UTF-8": b"\xff\xfe",
    "NUL": "\x00",
    "5,000 characters": "x" * 5000,
    "non-ASCII": "é☃",
    "empty": "",
}
OAUTH_FIELDS = (
    "grant_type",
    "code",
    "client_id",
    "code_verifier",
    "redirect_uri",
    "refresh_token",
    "resource",
    "token",
    "token_type_hint",
    "scope",
)
AUTHORIZE_FIELDS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "state",
    "code_challenge",
    "code_challenge_method",
    "scope",
    "resource",
)
REGISTER_FIELDS = (
    "client_name",
    "redirect_uris",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
)
CONSENT_FIELDS = ("approve", "mind_id", "scopes")
RESTORE_FIELDS = ("kind", "n", "prev", "sig", "seal", "format", "version", "backup_id", "source", "counts")


class Probe(NamedTuple):
    name: str
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = {}  # noqa: RUF012 - never changed: each probe builds its own
    query: list[tuple[str, Any]] | None = None
    token: str | None = None


def _object(base: dict[str, str], field: str, value: str) -> bytes:
    """`base` as JSON with `field` set to the JSON text `value` (as written, escapes and all)."""
    kept = {name: text for name, text in base.items() if name != field}
    parts = [f"{json.dumps(name)}: {json.dumps(text)}" for name, text in kept.items()]
    return ("{" + ", ".join([*parts, f"{json.dumps(field)}: {value}"]) + "}").encode()


def oauth(client_id: str) -> Iterator[Probe]:
    """/oauth/token and /oauth/revoke (JSON, form, Basic), /oauth/register, /oauth/authorize."""
    token_base = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": "c",
        "code_verifier": "v",
    }
    revoke_base = {"token": "oat_x", "client_id": client_id}
    for path, base in (("/oauth/token", token_base), ("/oauth/revoke", revoke_base)):
        for field in OAUTH_FIELDS:
            for name, value in VALUES.items():
                yield Probe(f"{path} JSON {field}: {name}", "POST", path, _object(base, field, value), JSON)
        for name, body in BODIES.items():
            yield Probe(f"{path} JSON body {name}", "POST", path, body, JSON)
        for name, body in FORMS.items():
            yield Probe(f"{path} form {name}", "POST", path, body, FORM)
        for content_type in ("text/plain", "application/json; charset=latin-1", "multipart/form-data", "é"):
            yield Probe(f"{path} as {content_type}", "POST", path, b"code=a", {"content-type": content_type})
        form = "&".join(f"{k}={v}" for k, v in base.items()).encode()
        for name, header in BASIC.items():
            yield Probe(f"{path} Authorization {name}", "POST", path, form, {**FORM, "authorization": header})
    registration = {"client_name": "Fuzz"}
    for field in REGISTER_FIELDS:
        for name, value in VALUES.items():
            body = _object(registration, field, value)
            if field != "redirect_uris":
                body = body[:-1] + b', "redirect_uris": ["http://127.0.0.1/cb"]}'
            yield Probe(f"/oauth/register {field}: {name}", "POST", "/oauth/register", body, JSON)
        yield Probe(
            f"/oauth/register {field} list of {len(VALUES)} values",
            "POST",
            "/oauth/register",
            _object(registration, field, "[" + ", ".join(VALUES.values()) + "]").replace(b"NaN", b"0"),
            JSON,
        )
    for name, body in BODIES.items():
        yield Probe(f"/oauth/register body {name}", "POST", "/oauth/register", body, JSON)
    authorize = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "http://127.0.0.1/cb",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    for field in AUTHORIZE_FIELDS:
        for name, value in QUERY_VALUES.items():
            query = [*((k, v) for k, v in authorize.items() if k != field), (field, value)]
            yield Probe(f"/oauth/authorize {field}: {name}", "GET", "/oauth/authorize", query=query)
        yield Probe(
            f"/oauth/authorize {field} twice", "GET", "/oauth/authorize", query=[(field, "a"), (field, "b")]
        )


def consent(mind: MindHandle, request_id: str) -> Iterator[Probe]:
    """GET and POST /oauth/requests/{id}: odd ids, and bodies whose fields are of every type."""
    for name, odd in {
        "surrogate bytes": "%ED%A0%80",
        "not UTF-8": "%FF",
        "2,000 characters": "r" * 2000,
        "dots": "..",
    }.items():
        yield Probe(f"consent GET id {name}", "GET", f"/oauth/requests/{odd}", token=mind.jwt)
        yield Probe(f"consent POST id {name}", "POST", f"/oauth/requests/{odd}", b"{}", JSON, token=mind.jwt)
    base = {"mind_id": mind.id}
    for field in CONSENT_FIELDS:
        for name, value in VALUES.items():
            body = _object(base, field, value)
            path = f"/oauth/requests/{request_id}"
            yield Probe(f"consent POST {field}: {name}", "POST", path, body, JSON, token=mind.jwt)
    for name, body in BODIES.items():
        path = f"/oauth/requests/{request_id}"
        yield Probe(f"consent POST body {name}", "POST", path, body, JSON, token=mind.jwt)


def _stream(texts: list[bytes]) -> bytes:
    """Lines from JSON object texts, each after the first given the `prev` of the ones before it
    (first in the object, so a probe's own `prev` wins)."""
    digest, lines = b"", []
    for index, text in enumerate(texts):
        line = text if index == 0 else b'{"prev": "' + digest.hex().encode() + b'", ' + text[1:]
        digest = hashlib.sha256(digest + line).digest()
        lines.append(line)
    return b"".join(line + b"\n" for line in lines)


def _text(record: dict[str, Any], field: str | None = None, value: str = "") -> bytes:
    """`record` as JSON text, `field` (if any) set to the JSON text `value` as written."""
    kept = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in record.items() if k != field]
    return ("{" + ", ".join(kept + ([f"{json.dumps(field)}: {value}"] if field else [])) + "}").encode()


def restore(mind: MindHandle, records: list[dict[str, Any]]) -> Iterator[Probe]:
    """POST /minds/{id}/restore, every stream chained and counted so that each line is read to its
    last check: a real backup's header (`records`, its lines) with each field of every type, a
    trailer likewise, each kind of line with its fields of every type, the backup's first memory,
    revision and proposal lines with each of their fields, and each field of the memory they hold,
    of every type (after the memory line they name), lines that are not JSON objects. Each stream
    also holds a `mind` line without settings (a 422 once every line before it is checked), so none
    restores and every probe meets an empty mind."""
    path, query = f"/minds/{mind.id}/restore", [("last", "true")]
    header = {k: v for k, v in records[0].items() if k not in {"prev", "sig"}}
    poison = _text({"n": 2, "kind": "mind", "settings": {}})

    def stream(*middle: bytes, end: tuple[str, str] | None = None, first: bytes | None = None) -> bytes:
        n = 2 + len(middle)
        counts: dict[str, int] = {"mind": 1}
        for line in middle:
            kind = json.loads(line)["kind"] if _readable(line) else "?"
            counts[kind] = counts.get(kind, 0) + 1
        trailer = {"n": n + 1, "kind": "end", "lines": n, "counts": counts}
        lines = [
            first or _text(header),
            *middle,
            _renumbered(poison, n),
            _text(trailer, *(end or (None, ""))),
        ]
        return _stream(lines)

    def probe(name: str, body: bytes) -> Probe:
        return Probe(name, "POST", path, body, NDJSON, query, mind.jwt)

    for field in RESTORE_FIELDS:
        for name, value in VALUES.items():
            yield probe(f"restore header {field}: {name}", stream(first=_text(header, field, value)))
            yield probe(f"restore trailer {field}: {name}", stream(end=(field, value)))
    for name, raw in BODIES.items():
        yield probe(f"restore line {name}", raw + b"\n")
        yield probe(f"restore second line {name}", _stream([_text(header)]) + raw + b"\n")

    def real(kind: str) -> dict[str, Any]:
        found = next(
            r for r in records if r["kind"] == kind and (kind != "proposal" or r["status"] == "pending")
        )
        return {k: v for k, v in found.items() if k not in {"prev", "sig", "n"}}

    memory_line = real("memory")
    for kind in ("memory", "revision", "proposal"):
        line = real(kind)
        before = [] if kind == "memory" else [_text({"n": 2, **memory_line})]
        n = 2 + len(before)
        for field in [name for name in line if name != "kind"]:
            for name, value in VALUES.items():
                changed = _text({"n": n, **line}, field, value)
                yield probe(f"restore {kind} {field}: {name}", stream(*before, changed))
        for field in line["memory"]:
            for name, value in VALUES.items():
                held = _text(line["memory"], field, value)
                changed = _text(
                    {"n": n, **{k: v for k, v in line.items() if k != "memory"}}, "memory", held.decode()
                )
                yield probe(f"restore {kind} memory.{field}: {name}", stream(*before, changed))
    lines: dict[str, dict[str, Any]] = {
        "mind": {"settings": {}},
        "memory": {"memory": {}},
        "revision": {"memory_id": "", "version": 1, "change": "created", "memory": {}},
        "deleted": {"memory_id": "", "version": 1},
        "proposal": {"id": "", "memory_id": "", "status": "pending", "proposed": {}, "memory": {}},
        "key": {"id": ""},
    }
    for kind, fields in lines.items():
        for field in fields:
            for name, value in VALUES.items():
                yield probe(
                    f"restore {kind} {field}: {name}",
                    stream(_text({"n": 2, "kind": kind, **fields}, field, value)),
                )


def _readable(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line).get("kind"), str)
    except (ValueError, AttributeError):
        return False


def _renumbered(line: bytes, n: int) -> bytes:
    return line.replace(b'"n": 2', f'"n": {n}'.encode(), 1)


def send(api: Api, probe: Probe) -> int:
    """The status the probe is answered with."""
    return api.call(
        probe.method,
        probe.path,
        token=probe.token,
        raw_body=probe.body,
        headers=dict(probe.headers),
        query=probe.query,
    ).status
