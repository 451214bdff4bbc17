"""Contract fuzzing: schemathesis generates requests for every operation of the served OpenAPI document
(`GET /openapi.json`) and sends them to a real `make run`, checking that nothing is a server error and
that every status code, content type and body is one the document promises, and that every request
the document calls valid is accepted (`ACCEPTED`).

The run carries real credentials (a JWT and a Mind Key, per operation, see contract_hooks.py) and ids
seeded here, so requests reach the handlers' logic. A failure is a bug in the service or a schema
that does not tell the truth: fix that, never exclude the operation or the check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from synapse.core.settings import DEV_JWT_SECRET

from infra.token import mint
from tests.support.runner import ROOT, RunningService, SharedStore, start_runner

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        # A request the document calls valid is accepted: nothing but what depends on the service's
        # state (a 404 for an id, a 409 for a limit or a busy item, a 412 for a stale version; a 304 is
        # the console's "you have it") may refuse it.
        "positive_data_acceptance",
    ]
)
ACCEPTED = ["2xx", "304", "404", "409", "412"]
# MCP's Streamable HTTP has a client GET /mcp for a server stream and DELETE it to end a session; a
# stateless server's answer to both is the protocol's own 405, whatever the request.
# OAuth's endpoints answer by the state of what a request names, as a 404 does for an id: the
# authorization endpoint always redirects, to the consent page or with the error (the client and
# redirect URI are the seeded ones, contract_hooks.py), bounded per caller per minute (429: the run
# is one caller); registrations are bounded so too; the token endpoint's invalid_grant (400) is
# its "no such code or refresh token" (one it never issued, or issued and used: each works once,
# so no seed can serve a run); its client is the seeded one.
# An invitation answers by whom it names and when: one the run created (a linked POST) for a
# generated user id or email is another person's, a 403 to the run's JWT; an expired one is a 410.
CONFIG = f"""
[checks.positive_data_acceptance]
expected-statuses = {json.dumps(ACCEPTED)}

[[operations]]
include-name = ["GET /mcp", "DELETE /mcp"]
checks.positive_data_acceptance.expected-statuses = ["405"]

[[operations]]
include-name = ["GET /oauth/authorize"]
checks.positive_data_acceptance.expected-statuses = ["302", "429"]

[[operations]]
include-name = ["POST /oauth/register"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "429"]

[[operations]]
include-name = ["POST /oauth/token"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400"]

[[operations]]
include-name = ["POST /invitations/accept", "POST /invitations/decline"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "403", "404", "409", "410"]
"""
# Per operation, per phase: bounded so the whole run stays well under three minutes on two cores.
MAX_EXAMPLES = 10
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, shared_store: SharedStore) -> Iterator[RunningService]:
    base = tmp_path_factory.mktemp("contract")
    # Loopback webhook receivers allowed, so the seeded webhook can exist on this machine; a start-up
    # slower than the default allows, as on a loaded CI machine, is not a contract failure. Its tables
    # are its own, in the test process's shared DynamoDB Local.
    loopback = shared_store.env("contract") | {"SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK": "true"}
    running = start_runner(base / "data", base / "runner.log", env=loopback, timeout=120)
    yield running
    running.stop()


def _post(service: RunningService, path: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    answer = requests.post(
        service.url + path,
        json=body,
        headers={"Authorization": f"Bearer {service.jwt}", **headers},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


REDIRECT = "http://127.0.0.1:9/callback"
VERIFIER = "contract-" + "v" * 40  # PKCE: the seeded codes' verifier
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).decode().rstrip("=")


def _authorization_request(service: RunningService, client_id: str) -> str:
    """A pending authorization request's id (oar_…), as the consent page gets it."""
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "code_challenge": CHALLENGE,
        "code_challenge_method": "S256",
    }
    answer = requests.get(service.url + "/oauth/authorize", params=params, allow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    return str(answer.headers["Location"]).rsplit("/", 1)[1]


def _code(service: RunningService, client_id: str, mind_id: str) -> str:
    """An authorization code for the mind, as the consent page's approval gives the app."""
    request_id = _authorization_request(service, client_id)
    approval: dict[str, Any] = {"approve": True, "mind_id": mind_id, "scopes": ["read", "write"]}
    answer = requests.post(
        f"{service.url}/oauth/requests/{request_id}",
        json=approval,
        headers={"Authorization": f"Bearer {service.jwt}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return parse_qs(urlsplit(answer.json()["redirect_to"]).query)["code"][0]


def _tokens(service: RunningService, client_id: str, code: str) -> dict[str, Any]:
    form = {"grant_type": "authorization_code", "code": code, "client_id": client_id}
    answer = requests.post(f"{service.url}/oauth/token", data={**form, "code_verifier": VERIFIER}, timeout=30)
    assert answer.status_code == 200, answer.text
    tokens: dict[str, Any] = answer.json()
    return tokens


def _oauth(service: RunningService, mind_id: str) -> dict[str, str]:
    """A registered client, two pending authorization requests, a code, a refresh token, and a
    grant to revoke: each code and token works once, so the first valid request of each kind gets
    them (the rest get the 400 or 404 of one used)."""
    client = _post(service, "/oauth/register", {"client_name": "Contract", "redirect_uris": [REDIRECT]})
    client_id = client["client_id"]
    pending = [_authorization_request(service, client_id) for _ in range(2)]
    refresh = _tokens(service, client_id, _code(service, client_id, mind_id))["refresh_token"]
    _tokens(service, client_id, _code(service, client_id, mind_id))
    grants = requests.get(
        f"{service.url}/minds/{mind_id}/grants",
        headers={"Authorization": f"Bearer {service.jwt}"},
        timeout=30,
    ).json()["grants"]
    return {
        "oauth_client": client_id,
        "oauth_redirect_uri": REDIRECT,
        "oauth_verifier": VERIFIER,
        "oauth_code": _code(service, client_id, mind_id),
        "oauth_refresh_token": refresh,
        "spare_grant": grants[0]["id"],  # newest first: the one whose refresh token was not kept
        "oauth_request": pending[0],
        "spare_oauth_request": pending[1],
    }


def _members(service: RunningService, mind_id: str) -> dict[str, str]:
    """Two people who joined the mind (invited by user id, accepted with their own JWT): one whose
    role the run changes, one it removes."""
    joined = {}
    for name, user_id in (("member", "contract-member"), ("spare_member", "contract-spare-member")):
        invited = {"role": "viewer", "user_id": user_id}
        token = _post(service, f"/minds/{mind_id}/invitations", invited)["token"]
        accepted = requests.post(
            service.url + "/invitations/accept",
            json={"token": token},
            headers={"Authorization": f"Bearer {mint(DEV_JWT_SECRET, user_id, 3600)}"},
            timeout=30,
        )
        assert accepted.status_code == 200, accepted.text
        joined[name] = user_id
    return joined


def seed(service: RunningService) -> dict[str, str]:
    """A mind with a memory, a proposal, keys, hooks and webhooks, an OAuth client and its pending
    authorization requests; a spare of each for the destructive operations."""
    mind = _post(service, "/minds", {"name": "Contract"})
    spare_mind = _post(service, "/minds", {"name": "Spare"})
    mind_id = mind["mind"]["id"]
    memories = [
        _post(
            service,
            "/memory",
            {"category": "fact", "key": key, "content": "Lives in Berlin"},
            **{"X-Mind-Id": mind_id},
        )
        for key in ("home_city", "spare_fact")
    ]
    hooks = [
        _post(service, f"/minds/{mind_id}/hooks", {"label": label}) for label in ("live", "spare", "rotated")
    ]
    # The Mind Key changing the owner's (verified) memory proposes the change.
    proposed = requests.post(
        service.url + "/memory",
        json={"category": "fact", "key": "home_city", "content": "Lives in Hamburg"},
        headers={"Authorization": f"Bearer {mind['mind_key']['key']}"},
        timeout=30,
    )
    assert proposed.status_code == 202, proposed.text
    webhook = {"url": "http://127.0.0.1:9/events", "events": ["memory.created"]}
    webhooks = [_post(service, f"/minds/{mind_id}/webhooks", webhook) for _ in range(2)]
    return {
        "url": service.url,
        "jwt": service.jwt,
        "mind": mind_id,
        "mind_key": mind["mind_key"]["key"],
        "spare_mind": spare_mind["mind"]["id"],
        "spare_key": _post(service, f"/minds/{mind_id}/keys", {"label": "spare"})["id"],
        "memory": memories[0]["id"],
        "memory_category": memories[0]["category"],
        "memory_key": memories[0]["key"],
        "spare_memory": memories[1]["id"],
        "proposal": proposed.json()["proposal"]["id"],
        "hook": hooks[0]["id"],
        "hook_secret": hooks[0]["secret"],
        "spare_hook": hooks[1]["id"],
        "rotated_hook": hooks[2]["id"],
        "webhook": webhooks[0]["id"],
        "backup": requests.get(
            f"{service.url}/minds/{mind_id}/backup",
            headers={"Authorization": f"Bearer {service.jwt}"},
            timeout=30,
        ).text,
        "spare_webhook": webhooks[1]["id"],
        **_oauth(service, mind_id),
        **_members(service, mind_id),
    }


def test_every_operation_keeps_its_contract_under_generated_requests(
    service: RunningService, tmp_path: Path
) -> None:
    # Given a seeded mind and the document the service serves
    seeded = seed(service)
    # When schemathesis fuzzes every operation with the right credentials
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "layers" / "synapse")]),
        "SCHEMATHESIS_HOOKS": "tests.e2e.contract_hooks",
        "SYNAPSE_CONTRACT": json.dumps(seeded),
    }
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [str(SCHEMATHESIS), "--config-file", str(config), "run", f"{service.url}/openapi.json"]
    command += ["--checks", CHECKS]
    command += ["--max-examples", str(MAX_EXAMPLES), "--seed", "1", "--workers", "2", "--no-shrink"]
    command += ["--suppress-health-check", "all"]
    result = subprocess.run(  # noqa: S603 - our own virtualenv's schemathesis
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600, check=False
    )
    # Then no check failed, and no request made the service answer 5xx
    report = result.stdout[-12_000:] + result.stderr[-4_000:]
    assert result.returncode == 0, report
    assert "Tested:" in result.stdout and "passed" in result.stdout, report
    assert service.server_errors() == [], service.output()[-8_000:]
    # And after every generated request (the /mcp ones carried lone surrogates too: contract_hooks.py)
    # each of the person's minds still reads: recall, lists and backup answer. Checked here, not in a
    # test of its own, which a pytest-xdist worker could run without this run before it.
    owner = {"Authorization": f"Bearer {service.jwt}"}
    minds = requests.get(service.url + "/minds", headers=owner, timeout=30).json()["minds"]
    assert seeded["mind"] in {m["id"] for m in minds}
    unreadable = {m["id"]: _readable(service, m["id"]) for m in minds}
    assert {k: v for k, v in unreadable.items() if set(v.values()) != {200}} == {}


# ---------------------------------------------------------------- /mcp: not text, not finite, too large
# Issue 32 item 1: one /mcp request with a lone UTF-16 surrogate made its mind unreadable for everyone.
# These are sent as raw bytes (the generated requests above are JSON a client library would write).

_LONE = "\\ud800"  # as it stands in the JSON text: a lone surrogate's escape


def _tool(name: str, arguments: str, request_id: str = "7") -> bytes:
    body = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"{name}",'
    return (body + f'"arguments":{arguments}}}}}').encode()


_HOSTILE_MCP: dict[str, bytes] = {
    "tag": _tool("remember", f'{{"content":"Likes tea","tags":["{_LONE}"]}}'),
    "content": _tool("remember", f'{{"content":"Likes tea {_LONE}"}}'),
    "key": _tool("remember", f'{{"content":"Likes tea","key":"{_LONE}"}}'),
    "argument name": _tool("remember", f'{{"content":"Likes tea","{_LONE}":1}}'),
    "forget key": _tool("forget", f'{{"category":"note","key":"{_LONE}"}}'),
    "forget id": _tool("forget", f'{{"id":"mem_{_LONE}"}}'),
    "search": _tool("search", f'{{"query":"tea {_LONE}"}}'),
    "many": _tool("remember_many", f'{{"memories":[{{"content":"a"}},{{"content":"{_LONE}"}}]}}'),
    "string id": _tool("recall", "{}", request_id=f'"{_LONE}"'),
    "method": f'{{"jsonrpc":"2.0","id":1,"method":"ping{_LONE}"}}'.encode(),
    "NaN": _tool("remember", '{"content":"Likes tea","confidence":NaN}'),
    "Infinity": _tool("remember", '{"content":"Likes tea","confidence":-Infinity}'),
    "1e999": _tool("remember", '{"content":"Likes tea","confidence":1e999}'),
    "huge id": _tool("recall", "{}", request_id="1" + "0" * 400),
    "huge integer": _tool("history", '{"id":"mem_x","limit":' + "9" * 400 + "}"),
    "5000 digits": _tool("history", '{"id":"mem_x","limit":' + "9" * 5000 + "}"),
    "40 KiB content": _tool("remember", '{"content":"' + "x" * 40_960 + '"}'),
    "30 tags": _tool(
        "remember", '{"content":"Likes tea","tags":' + json.dumps([f"t{i}" for i in range(30)]) + "}"
    ),
    "long key": _tool("remember", '{"content":"Likes tea","key":"' + "k" * 5000 + '"}'),
    "long id": _tool("fetch", '{"id":"mem_' + "x" * 100_000 + '"}'),
    "deep": _tool("remember", "[" * 40 + "]" * 40),
    "1 MiB": _tool("remember", '{"content":"' + "x" * (1024 * 1024 - 200) + '"}'),
    "batch": ("[" + ",".join([_tool("ping", "{}").decode()] * 20) + "]").encode(),
}


def _readable(service: RunningService, mind_id: str) -> dict[str, int]:
    """What every member reads of the mind, by status: recall, lists, backup."""
    owner = {"Authorization": f"Bearer {service.jwt}", "X-Mind-Id": mind_id}
    reads = {
        "recall": ("/memory/recall", {}),
        "list": ("/memory", {}),
        "notes": ("/memory", {"category": "note"}),
        "backup": (f"/minds/{mind_id}/backup", {}),
    }
    return {
        name: requests.get(service.url + path, params=query, headers=owner, timeout=30).status_code
        for name, (path, query) in reads.items()
    }


@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26"])
def test_mcp_answers_what_is_not_text_or_too_large_without_a_server_error_and_the_mind_reads(
    service: RunningService, version: str
) -> None:
    # Given a mind and its write-scoped Mind Key
    mind = _post(service, "/minds", {"name": f"MCP edges {version}"})
    mind_id, key = mind["mind"]["id"], mind["mind_key"]["key"]
    headers = {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    # When /mcp receives each hostile message
    answers = {
        name: requests.post(service.url + "/mcp", data=body, headers=headers, timeout=60)
        for name, body in _HOSTILE_MCP.items()
    }
    # Then none is a server error, each is a JSON-RPC answer, and nothing of them was stored
    assert {name: a.status_code for name, a in answers.items() if a.status_code >= 500} == {}
    assert {n: a.text[:300] for n, a in answers.items() if "jsonrpc" not in a.text} == {}
    assert _readable(service, mind_id) == {"recall": 200, "list": 200, "notes": 200, "backup": 200}
    listed = requests.get(
        service.url + "/memory", headers={"Authorization": f"Bearer {key}"}, timeout=30
    ).json()["memories"]
    assert listed == []  # remember_many too: a message with a lone surrogate is refused whole
    assert service.server_errors() == [], service.output()[-8_000:]


# ---------------------------------------------------------------- restore: hostile lines (issue 32 item 4)
# A backup's lines are JSON the owner may edit and chain again: values JSON decodes but no write
# takes (lone surrogates, numbers that are not finite, oversized text) are sent as restore lines,
# each a change to one line of a backup the service wrote. Kept apart from the generated run above.

RESTORE_PLACEHOLDER = "@literal"


def _restore_variants() -> dict[str, tuple[str, Any, str | None]]:
    """name → (kind of the line changed, (field path, value), JSON text put for the placeholder)."""
    big = "x" * (40 * 1024)
    return {
        "lone surrogate in a tag": ("memory", (("memory", "tags"), ["\ud800"]), None),
        "lone surrogate in content": ("memory", (("memory", "content"), "a\udc00b"), None),
        "lone surrogate in a key": ("memory", (("memory", "key"), "\ud83d"), None),
        "lone surrogate in who changed": ("revision", (("changed_by", "user_id"), "\udfff"), None),
        "lone surrogate in the mind's name": ("header", (("source", "mind_name"), "\ud800"), None),
        "lone surrogate as a field name": ("key", (("\ud800",), 1), None),
        "NaN confidence": ("memory", (("memory", "confidence"), RESTORE_PLACEHOLDER), "NaN"),
        "1e999 confidence": ("memory", (("memory", "confidence"), RESTORE_PLACEHOLDER), "1e999"),
        "-Infinity version": ("memory", (("memory", "version"), RESTORE_PLACEHOLDER), "-Infinity"),
        "1e999 retention": ("mind", (("settings", "history_retention_days"), RESTORE_PLACEHOLDER), "1e999"),
        "NaN base_version": ("proposal", (("base_version",), RESTORE_PLACEHOLDER), "NaN"),
        "1e999 ttl": ("revision", (("ttl",), RESTORE_PLACEHOLDER), "1e999"),
        "10^40 ttl": ("revision", (("ttl",), 10**40), None),
        "a 40 KiB memory": ("memory", (("memory", "content"), big), None),
        "a 40 KiB proposal": ("proposal", (("proposed", "content"), big), None),
        "a 600 KiB changed_by": ("revision", (("changed_by", "user_id"), "u" * 600_000), None),
        "300 tags": ("memory", (("memory", "tags"), [f"t{i}" for i in range(300)]), None),
        "retention in words": ("mind", (("settings", "history_retention_days"), "ninety"), None),
        "an unknown proposed priority": ("proposal", (("proposed", "priority"), "urgent"), None),
    }


def _restore_edited(lines: list[bytes], kind: str, change: Any, literal: str | None) -> bytes:
    """The backup with the first line of `kind` changed, every `prev` after it computed again."""
    path, value = change
    at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == kind)
    record = json.loads(lines[at])
    target = record
    for name in path[:-1]:
        target = target[name]
    target[path[-1]] = value
    text = json.dumps(record, separators=(",", ":"))  # surrogates stay escaped, as JSON allows
    if literal is not None:
        text = text.replace(json.dumps(RESTORE_PLACEHOLDER), literal)
    changed = [*lines[:at], text.encode(), *lines[at + 1 :]]
    digest, out = b"", []
    for line in changed:
        record = json.loads(line)
        if record["n"] > 1:
            line = line.replace(f'"prev":"{record["prev"]}"'.encode(), f'"prev":"{digest.hex()}"'.encode())
        digest = hashlib.sha256(digest + line).digest()
        out.append(line)
    return b"\n".join(out) + b"\n"


def _restore_readable(service: RunningService, token: str, mind_id: str) -> None:
    """Every read of the mind a member makes answers, as after any refused request."""
    headers = {"Authorization": f"Bearer {token}", "X-Mind-Id": mind_id}
    for path in (f"/minds/{mind_id}", "/minds", "/memory", "/memory/recall", "/proposals"):
        answer = requests.get(service.url + path, headers=headers, timeout=30)
        assert answer.status_code == 200, (path, answer.text)
    backup = requests.get(f"{service.url}/minds/{mind_id}/backup", headers=headers, timeout=30)
    assert backup.status_code == 200, backup.text


def _restore_seed(service: RunningService, token: str) -> tuple[str, list[bytes]]:
    """A person's own mind (not the generated run's: its limits and state are its own) with a
    memory they wrote and an agent's pending proposal to change it, and the mind's backup."""
    as_person = {"Authorization": f"Bearer {token}"}
    created = requests.post(service.url + "/minds", json={"name": "Restored"}, headers=as_person, timeout=30)
    assert created.status_code == 201, created.text
    mind_id, key = created.json()["mind"]["id"], created.json()["mind_key"]["key"]
    memory = {"category": "fact", "key": "home_city", "content": "Lives in Berlin", "tags": ["home"]}
    for credential, content, status in ((token, "Lives in Berlin", 201), (key, "Lives in Hamburg", 202)):
        answer = requests.post(
            service.url + "/memory",
            json={**memory, "content": content},
            headers={"Authorization": f"Bearer {credential}", "X-Mind-Id": mind_id},
            timeout=30,
        )
        assert answer.status_code == status, answer.text
    backup = requests.get(f"{service.url}/minds/{mind_id}/backup", headers=as_person, timeout=30)
    assert backup.status_code == 200, backup.text
    return mind_id, backup.content.splitlines()


def test_restore_lines_no_write_would_take_are_refused_and_leave_every_mind_readable(
    service: RunningService,
) -> None:
    # Given a mind with a memory and a pending proposal, its backup, and an empty mind
    token = mint(DEV_JWT_SECRET, "contract-restorer", 3600)
    source, lines = _restore_seed(service, token)
    assert {json.loads(line)["kind"] for line in lines} >= {"mind", "memory", "revision", "proposal"}
    target = _post_as(service, token, "/minds", {"name": "Restore target"})["mind"]["id"]
    restore = f"{service.url}/minds/{target}/restore?last=true"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    for name, (kind, change, literal) in _restore_variants().items():
        # When the backup is restored with one line holding a value no write would take
        body = _restore_edited(lines, kind, change, literal)
        answer = requests.post(restore, data=body, headers=headers, timeout=60)
        # Then it is refused naming the line, never a 5xx
        assert answer.status_code == 422, (name, answer.status_code, answer.text)
        assert answer.json()["error"]["details"][0]["line"] >= 1, (name, answer.text)
        # And both minds read as before
        _restore_readable(service, token, target)
        _restore_readable(service, token, source)
    # And the backup as the service wrote it restores whole, and the copy reads
    answer = requests.post(restore, data=b"\n".join(lines) + b"\n", headers=headers, timeout=60)
    assert answer.status_code == 200 and answer.json()["status"] == "done", answer.text
    _restore_readable(service, token, target)
    assert service.server_errors() == [], service.output()[-8_000:]


def _post_as(service: RunningService, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = requests.post(
        service.url + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created
