"""Replay issue 32's attacks 1-5 and issue 40's 6-7 against a running Synapse and say, for each,
whether it held.

    PYTHONPATH=layers/synapse:. .venv/bin/python bench/attacks.py [--url http://127.0.0.1:3000]

With `--url` it attacks that service (`make run`: it must sign HS256 with the dev secret, since the
script mints a JWT per person); without, it starts the local runner on a free loopback port and a
temporary data dir (as the e2e tests do) and stops it after. Everything goes over real HTTP, to
loopback only, every request with a timeout. Each person is a fresh `sub` per run, so runs do not
meet. It prints one line per check, `held` or `BROKEN` with why, then a summary; exit code 0 when
every check held. `tests/e2e/test_attacks.py` runs the same checks under pytest.

1. A lone surrogate (`"\\ud800"`, a raw JSON escape) through /mcp with a Mind Key: no 500, and the
   mind stays readable (recall, list, `category=note`, backup).
2. Removal and demotion end what the member held: an invitation a removed owner issued, their Mind
   Key, hook and OAuth grant, and a code approved by an owner demoted before its exchange.
3. OAuth redirects go only where a client registered: a backslash-userinfo loopback URI, control
   characters at registration, error redirects (open redirect), revocation by another client.
4. A restore checks every line: bad settings, oversized or out-of-range memories, NaN, 1e999, a
   non-numeric `base_version`, an unknown proposed priority give 422 and every read stays 200.
5. A backup edited to say `verified_by: "bob"` cannot make bob vouch for an agent's memory.

And issue 40's (items 2-3):

6. A restore keeps a mind consistent: two lines with one id are a 422; a `pending_proposal` naming
   no proposal of the file is dropped, so the memory can be written (it was 429 for good); a signed
   backup cut short under a forged trailer is `trust: partial`, never `kept`.
7. Malformed input (tests/support/malformed.py): the OAuth endpoints' JSON and form bodies, query
   strings and HTTP Basic credentials, the consent endpoints, restore's lines of every kind with
   fields of every type. It prints how many requests it sent and how many were answered 5xx: 0.
   `--sample` sends restore's lines as `restore_sample` picks them (each kind of line with each
   type of value, and every body that is not lines of JSON) instead of all of them: what
   `tests/e2e/test_attacks.py` sends, since every one of them is sent to the same handler in
   process by tests/integration/test_malformed_input.py.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "layers" / "synapse")]  # the e2e tests' helpers, the dev secret

from synapse.core.settings import DEV_JWT_SECRET  # noqa: E402
from synapse.memory.proposals import new_proposal_id  # noqa: E402

from infra.gateway import HttpResponse  # noqa: E402
from infra.token import mint  # noqa: E402
from tests.support import malformed  # noqa: E402
from tests.support.api import MindHandle  # noqa: E402
from tests.support.backups import NDJSON, HttpApi, rebuilt  # noqa: E402
from tests.support.oauth import FORM, Flow, pkce  # noqa: E402
from tests.support.runner import start_runner  # noqa: E402
from tests.support.teams import accept, invitation_token  # noqa: E402

SURROGATE = "\ud800"  # json.dumps writes it as the six characters \ud800
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
REFUSED = (400, 401, 403, 404, 409, 410, 422)  # an invitation or restore refused
CUT_OFF = (401, 403, 404)  # a credential refused
RAW = {'"@NaN@"': "NaN", '"@1e999@"': "1e999"}  # placeholders for what json.dumps will not write


@dataclass
class Check:
    name: str
    held: bool
    reason: str


class Attacks:
    """One run against `url`: its people, its calls, and what each check found."""

    def __init__(self, url: str, sample: bool = False) -> None:
        assert urlsplit(url).hostname in {"127.0.0.1", "::1", "localhost"}, f"loopback only: {url}"
        self.url, self.api = url, HttpApi(url, "")
        self.sample = sample  # restore's malformed lines: `restore_sample`, not every one
        self.run = uuid.uuid4().hex[:8]
        self.checks: list[Check] = []
        self.sent = self.server_errors = 0  # malformed-input probes (7)

    # ------------------------------------------------------------------ helpers

    def check(self, name: str, held: bool, reason: str) -> None:
        self.checks.append(Check(name, held, reason))
        print(f"{'held  ' if held else 'BROKEN'}  {name}: {reason}", flush=True)

    @contextmanager
    def attempt(self, item: str) -> Iterator[None]:
        """An attack whose setup fails (a 500 on the way, say) is reported, not fatal to the run."""
        try:
            yield
        except Exception as failure:  # any failure is this item's finding
            self.check(f"{item} (could not complete)", False, f"{type(failure).__name__}: {failure}"[:300])

    def jwt(self, who: str) -> str:
        return mint(DEV_JWT_SECRET, self.sub(who), 3600)

    def sub(self, who: str) -> str:
        return f"atk-{self.run}-{who}"

    def call(self, method: str, path: str, **kwargs: Any) -> HttpResponse:
        return self.api.call(method, path, **kwargs)

    def ok(self, answer: HttpResponse, status: int = 200) -> dict[str, Any]:
        if answer.status != status:
            raise RuntimeError(f"expected {status}, got {answer.status}: {answer.text[:200]}")
        body: dict[str, Any] = answer.json()
        return body

    def mind(self, who: str) -> MindHandle:
        token = self.jwt(who)
        body = self.ok(self.call("POST", "/minds", token=token, json_body={"name": f"{who}'s mind"}), 201)
        return MindHandle(body["mind"]["id"], token, body["mind_key"]["key"], body["mind_key"]["id"])

    def mcp(self, token: str, method: str, params: dict[str, Any], rpc_id: Any = 1) -> HttpResponse:
        message = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
        return self.call(
            "POST", "/mcp", token=token, raw_body=json.dumps(message).encode(), headers=MCP_HEADERS
        )

    def register(self, redirect_uris: list[str]) -> HttpResponse:
        """POST /oauth/register, waiting out its per-address bound (10 a minute) when a run meets it."""
        body = {"client_name": "Attacker", "redirect_uris": redirect_uris}
        for _ in range(3):
            answer = self.call("POST", "/oauth/register", json_body=body)
            if answer.status != 429:
                return answer
            time.sleep(min(65, int(answer.headers.get("Retry-After", "5"))))
        return answer

    def flow(self, redirect_uri: str) -> Flow:
        """The tests' OAuth builder for a new client, bound to this service's resource (its /mcp)."""
        resource, client_id = f"{self.url}/mcp", self.ok(self.register([redirect_uri]), 201)["client_id"]

        class HttpFlow(Flow):
            def __init__(self, api: HttpApi) -> None:  # registered above, with the wait
                self.api, self.redirect_uri, self.pkce, self.client_id = api, redirect_uri, pkce(), client_id

            def authorize(self, **overrides: Any) -> Any:
                return super().authorize(**{"resource": resource, **overrides})

            def exchange(self, code: str, **overrides: str) -> Any:
                return super().exchange(code, **{"resource": resource, **overrides})

        return HttpFlow(self.api)

    def join(self, mind: MindHandle, who: str, role: str) -> str:
        """`who` joins with `role`, invited by user id by the mind's creator; their JWT."""
        token = invitation_token(self.api, mind, role=role, user_id=self.sub(who))
        self.ok(accept(self.api, token, self.jwt(who)))
        return self.jwt(who)

    def _as(self, mind: MindHandle, token: str) -> MindHandle:
        """The mind as another member addresses it (the tests' builders take a handle)."""
        return MindHandle(mind.id, token, mind.key, mind.key_id)

    def reads(self, token: str, mind_id: str) -> dict[str, int]:
        """The status of each read a member makes of the mind."""
        member = {"token": token, "headers": {"X-Mind-Id": mind_id}}
        return {
            "GET /minds": self.call("GET", "/minds", token=token).status,
            "recall": self.call("GET", "/memory/recall", **member).status,
            "list": self.call("GET", "/memory", **member).status,
            "category=note": self.call("GET", "/memory", query={"category": "note"}, **member).status,
            "proposals": self.call("GET", "/proposals", **member).status,
            "backup": self.call("GET", f"/minds/{mind_id}/backup", token=token).status,
        }

    # ------------------------------------------------------------------ 1. /mcp input

    def surrogates(self) -> None:
        mind = self.mind("mcp-owner")
        note = {"category": "note", "key": f"k{SURROGATE}"}
        sends: dict[str, tuple[str, dict[str, Any], Any]] = {
            "remember tag": ("remember", {"content": "x", "tags": [SURROGATE]}, 1),
            "remember content": ("remember", {"content": f"a{SURROGATE}b"}, 2),
            "remember key": ("remember", {"content": "y", **note}, 3),
            "JSON-RPC id": ("recall", {}, SURROGATE),
            "forget key": ("forget", note, 5),
        }
        for name, (tool, arguments, rpc_id) in sends.items():
            status = self.mcp(mind.key, "tools/call", {"name": tool, "arguments": arguments}, rpc_id).status
            self.check(f"1 /mcp surrogate in {name}", status < 500, f"answered {status}")
        failing = {read: status for read, status in self.reads(mind.jwt, mind.id).items() if status != 200}
        self.check("1 mind readable after the surrogates", not failing, f"not 200: {failing or 'none'}")

    # ------------------------------------------------------------------ 2. removal and demotion

    def removal(self) -> None:
        creator = self.mind("creator")
        app = self.flow("http://127.0.0.1/callback")
        held: dict[str, dict[str, Any]] = {}
        for who in ("removed", "demoted"):
            jwt = self.join(creator, who, "owner")
            made = {"token": jwt, "json_body": {"label": who}}
            held[who] = {
                "key": self.ok(self.call("POST", f"/minds/{creator.id}/keys", **made), 201)["key"],
                "hook": self.ok(self.call("POST", f"/minds/{creator.id}/hooks", **made), 201),
                "grant": app.tokens(self._as(creator, jwt), scopes=["read", "write"]),
                "client_id": app.client_id,
            }
            before = self.uses(held[who])
            if any(status >= 300 for status in before.values()):
                raise RuntimeError(f"the {who} owner's credentials do not work to begin with: {before}")
        removed = self._as(creator, self.jwt("removed"))
        second = invitation_token(self.api, removed, role="owner", user_id=self.sub("second-account"))
        code = app.code(self._as(creator, self.jwt("demoted")), scopes=["read", "write", "delete"])
        members = f"/minds/{creator.id}/members"
        gone = self.call("DELETE", f"{members}/{self.sub('removed')}", token=creator.jwt)
        if gone.status != 204:
            raise RuntimeError(f"removing the member answered {gone.status}: {gone.text[:200]}")
        demote = {"token": creator.jwt, "json_body": {"role": "editor"}}
        self.ok(self.call("PATCH", f"{members}/{self.sub('demoted')}", **demote))

        joined = accept(self.api, second, self.jwt("second-account")).status
        self.check("2 removed owner's invitation accepted", joined in REFUSED, f"accept answered {joined}")
        for who, credentials in held.items():
            after = self.uses(credentials)
            for kind in ("key", "hook", "grant"):
                used = {name: status for name, status in after.items() if name.startswith(kind)}
                cut = all(
                    status in CUT_OFF or (n == "grant refresh" and status == 400)
                    for n, status in used.items()
                )
                self.check(f"2 {who} owner's {kind}", cut, ", ".join(f"{n} {s}" for n, s in used.items()))
        exchanged = app.exchange(code)
        error = exchanged.json().get("error") if exchanged.status < 500 else None
        said = f"exchange answered {exchanged.status} {error or ''}".strip()
        self.check("2 code approved by an owner demoted before exchange", error == "invalid_grant", said)

    def uses(self, credentials: dict[str, Any]) -> dict[str, int]:
        """The status of each use of a member's credentials (the grant's refresh last: it rotates)."""
        key, grant = credentials["key"], credentials["grant"]
        body = {"category": "fact", "key": "by_key", "content": f"Written {uuid.uuid4()}"}
        return {
            "key recall": self.call("GET", "/memory/recall", token=key).status,
            "key write": self.call("POST", "/memory", token=key, json_body=body).status,
            "hook delivery": self.deliver(credentials["hook"]),
            "grant access token": self.mcp(grant["access_token"], "tools/list", {}).status,
            "grant refresh": self.refresh(grant, credentials["client_id"]),
        }

    def refresh(self, grant: dict[str, Any], client_id: str) -> int:
        """Refresh the grant, keeping its new tokens so that it can be used again; the status."""
        form = {
            "grant_type": "refresh_token",
            "refresh_token": grant["refresh_token"],
            "client_id": client_id,
        }
        answer = self.call("POST", "/oauth/token", raw_body=urlencode(form).encode(), headers=FORM)
        if answer.status == 200:
            grant.update(answer.json())
        return answer.status

    def deliver(self, hook: dict[str, Any]) -> int:
        """A signed delivery, a new body each time (the same signed request would be a replay)."""
        memory = {"category": "fact", "key": "via_hook", "content": f"Delivered {uuid.uuid4()}"}
        body, stamp = json.dumps(memory).encode(), int(time.time())
        mac = hmac.new(hook["secret"].encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
        headers = {"content-type": "application/json", "synapse-signature": f"t={stamp},v1={mac}"}
        return self.call("POST", f"/hooks/{hook['id']}", raw_body=body, headers=headers).status

    # ------------------------------------------------------------------ 3. OAuth redirects

    def redirects(self) -> None:
        owner = self.mind("oauth-owner")
        app = self.flow("http://127.0.0.1/callback")
        sly = "http://127.0.0.2:9999\\@127.0.0.1/callback"
        started = app.authorize(redirect_uri=sly)
        sent_to = [started.headers.get("Location", "")]
        if started.status == 302 and "/console#/connect/" in sent_to[0]:
            decided = app.decide(owner, sent_to[0].rsplit("/", 1)[1])
            sent_to.append(decided.json().get("redirect_to", "") if decided.status < 500 else "")
        leaked = [to for to in sent_to if "127.0.0.2" in to or "\\" in to or "%5C" in to.upper()]
        said = f"authorize {started.status}, sent to {leaked or 'nowhere else'}"
        self.check("3 backslash loopback redirect_uri", started.status < 500 and not leaked, said)

        for name, uri in {
            "CR": "http://127.0.0.1/cb\rX-Injected: 1",
            "LF": "http://127.0.0.1/cb\nX-Injected: 1",
            "TAB": "http://127.0.0.1/c\tb",
            "NUL": "http://127.0.0.1/cb\x00",
            "leading space": " http://127.0.0.1/cb",
        }.items():
            status = self.register([uri]).status
            self.check(f"3 registration with {name} in redirect_uri", status == 400, f"answered {status}")

        evil = "https://evil.example/cb"
        for name, client in (("an unregistered", app), ("a self-registered", self.flow(evil))):
            answer = client.authorize(redirect_uri=evil, response_type="token")  # an error to report
            where = urlsplit(answer.headers.get("Location", "")).hostname
            said = f"answered {answer.status}" + (f", Location at {where}" if where else "")
            redirected = answer.status >= 500 or where == "evil.example"
            self.check(f"3 error redirect to {name} https URI", not redirected, said)

        victim, other = app.tokens(owner), self.flow("http://127.0.0.1/other")
        if self.mcp(victim["access_token"], "tools/list", {}).status != 200:
            raise RuntimeError("the victim's access token does not work to begin with")
        for hint in ("access_token", "refresh_token"):
            form = {"token": victim[hint], "token_type_hint": hint, "client_id": other.client_id}
            self.call("POST", "/oauth/revoke", raw_body=urlencode(form).encode(), headers=FORM)
        used = self.mcp(victim["access_token"], "tools/list", {}).status
        refreshed = app.refresh(victim["refresh_token"]).status
        said = f"victim's access token {used}, refresh {refreshed}"
        self.check("3 RFC 7009 revocation by another client", used == 200 and refreshed == 200, said)

    # ------------------------------------------------------------------ 4-5. restore

    def source_backup(self) -> tuple[list[dict[str, Any]], str]:
        """A backup of a mind with a person's memory, an agent's, and a pending proposal; the
        agent memory's id."""
        mind = self.mind("backup-source")
        person = {"token": mind.jwt, "headers": {"X-Mind-Id": mind.id}}
        fact = {"category": "fact", "key": "home_city", "content": "Lives in Berlin", "tags": ["home"]}
        self.ok(self.call("POST", "/memory", json_body=fact, **person), 201)
        coffee = {"category": "preference", "key": "coffee", "content": "Drinks flat whites"}
        agent_id = self.ok(self.call("POST", "/memory", token=mind.key, json_body=coffee), 201)["id"]
        self.ok(
            self.call("POST", "/memory", token=mind.key, json_body={**fact, "content": "Lives in Oslo"}), 202
        )
        answer = self.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt)
        if answer.status != 200 or answer.headers.get("X-Next-Cursor"):
            raise RuntimeError(f"backup answered {answer.status}: {answer.text[:200]}")
        return [json.loads(line) for line in answer.body.splitlines()], agent_id

    def restore(self, who: str, records: list[dict[str, Any]]) -> tuple[HttpResponse, MindHandle]:
        """Restore the records, chained again as someone who knows the format would, into a new
        mind of a new person."""
        digest, lines = b"", []
        for record in records:
            if record["n"] > 1:
                record["prev"] = digest.hex()
            encoded = json.dumps(record, separators=(",", ":"))
            for placeholder, raw in RAW.items():
                encoded = encoded.replace(placeholder, raw)
            lines.append(encoded.encode())
            digest = hashlib.sha256(digest + lines[-1]).digest()
        target = self.mind(who)
        body = b"".join(line + b"\n" for line in lines)
        path = f"/minds/{target.id}/restore"
        return self.call(
            "POST", path, token=target.jwt, raw_body=body, headers=NDJSON, query={"last": "true"}
        ), target

    def restores(self) -> None:
        records, agent_id = self.source_backup()

        def edit(
            kind: str, change: Callable[[dict[str, Any]], None]
        ) -> Callable[[list[dict[str, Any]]], None]:
            def apply(copy: list[dict[str, Any]]) -> None:
                change(next(r for r in copy if r["kind"] == kind))

            return apply

        def memory(**fields: Any) -> Callable[[list[dict[str, Any]]], None]:
            return edit("memory", lambda r: r["memory"].update(fields))

        cases = {
            'settings history_retention_days "ninety"': edit(
                "mind", lambda r: r["settings"].update(history_retention_days="ninety")
            ),
            "40 KiB content": memory(content="x" * 40 * 1024),
            "30 tags": memory(tags=[f"t{n}" for n in range(30)]),
            "confidence 5.0": memory(confidence=5.0),
            "version -7": memory(version=-7),
            "confidence NaN": memory(confidence="@NaN@"),
            "confidence 1e999": memory(confidence="@1e999@"),
            "duplicate tags": memory(tags=["home", "home"]),
            'base_version "seven"': edit("proposal", lambda r: r.update(base_version="seven")),
            'proposed priority "urgent"': edit("proposal", lambda r: r["proposed"].update(priority="urgent")),
        }
        for n, (name, change) in enumerate(cases.items()):
            copy = json.loads(json.dumps(records))
            change(copy)
            answer, target = self.restore(f"restorer-{n}", copy)
            failing = {read: s for read, s in self.reads(target.jwt, target.id).items() if s != 200}
            said = f"restore {answer.status}, reads not 200: {failing or 'none'}"
            self.check(f"4 restore with {name}", answer.status == 422 and not failing, said)

        copy = json.loads(json.dumps(records))
        for record in copy:
            shown = record.get("memory") if record["kind"] in {"memory", "revision"} else None
            if shown and shown.get("id") == agent_id:
                shown.update(verified=True, verified_by="bob", verified_at=shown["updated_at"])
        answer, target = self.restore("forger", copy)
        if answer.status in REFUSED:
            self.check("5 forged verified_by in a backup", True, f"restore refused ({answer.status})")
            return
        got = self.call("GET", f"/memory/{agent_id}", token=target.jwt, headers={"X-Mind-Id": target.id})
        vouched = got.json().get("verified_by") if got.status == 200 else f"(memory answered {got.status})"
        said = f"restore {answer.status}, verified_by {vouched!r} (the restorer is {self.sub('forger')!r})"
        self.check("5 forged verified_by in a backup", answer.status == 200 and vouched != "bob", said)

    # ------------------------------------------------------------------ 6. a consistent restore

    def send_lines(self, who: str, lines: list[bytes]) -> tuple[HttpResponse, MindHandle]:
        target = self.mind(who)
        body = b"".join(line + b"\n" for line in lines)
        path = f"/minds/{target.id}/restore"
        sent = self.call(
            "POST", path, token=target.jwt, raw_body=body, headers=NDJSON, query={"last": "true"}
        )
        return sent, target

    def consistency(self) -> None:
        records, agent_id = self.source_backup()
        memories = [r for r in records if r["kind"] == "memory"]

        twice = json.loads(json.dumps(records))
        copy = json.loads(json.dumps(memories[0]))
        copy["memory"]["key"] = "a_second_key"
        twice.insert(twice.index(memories[0]) + 1, copy)
        answer, target = self.send_lines("twice", rebuilt(twice))
        listed = self.call("GET", "/memory", token=target.jwt, headers={"X-Mind-Id": target.id})
        count = len(listed.json().get("memories", [])) if listed.status == 200 else -1
        said = f"restore {answer.status}, {count} memories written"
        self.check("6 two memory lines with one id", answer.status == 422 and count == 0, said)

        dangling = json.loads(json.dumps(records))
        line = next(r for r in dangling if r["kind"] == "memory" and r["memory"]["id"] == agent_id)
        line["memory"]["pending_proposal"] = new_proposal_id(datetime.now(UTC))  # no line holds it
        answer, target = self.send_lines("dangling", rebuilt(dangling))
        person = {"token": target.jwt, "headers": {"X-Mind-Id": target.id}}
        written = self.call(
            "PUT", f"/memory/{agent_id}", json_body={"content": "Drinks tea"}, **person
        ).status
        said = f"restore {answer.status}, the owner's write answered {written}"
        self.check("6 a pending_proposal naming no proposal", answer.status == 200 and written == 200, said)

        signed = self.signed_backup()
        keep = max(i for i, text in enumerate(signed) if json.loads(text)["kind"] == "memory") + 1
        successor = json.loads(signed[keep])
        counts: dict[str, int] = {}
        for text in signed[1:keep]:
            kind = json.loads(text)["kind"]
            counts[kind] = counts.get(kind, 0) + 1
        trailer = {"n": keep + 1, "kind": "end", "prev": successor["prev"], "sig": successor["sig"]}
        trailer.update(seal=json.loads(signed[-1])["seal"], lines=keep, counts=counts)
        forged = [*signed[:keep], json.dumps(trailer, separators=(",", ":")).encode()]
        answer, _ = self.send_lines("cut-short", forged)
        trust = answer.json().get("trust") if answer.status == 200 else None
        said = f"restore {answer.status}, trust {trust!r}"
        self.check(
            "6 a signed backup cut short under a forged trailer",
            trust != "kept" and answer.status < 500,
            said,
        )

    def signed_backup(self) -> list[bytes]:
        """A backup as this service wrote it: signed, sealed."""
        mind = self.mind("signed-source")
        person = {"token": mind.jwt, "headers": {"X-Mind-Id": mind.id}}
        for key in ("home_city", "work", "coffee"):
            self.ok(
                self.call(
                    "POST", "/memory", json_body={"category": "fact", "key": key, "content": key}, **person
                ),
                201,
            )
        return self.call("GET", f"/minds/{mind.id}/backup", token=mind.jwt).body.splitlines()

    # ------------------------------------------------------------------ 7. malformed input

    def send_probe(self, probe: malformed.Probe) -> int:
        """A probe over HTTP: its query string as given (bytes too), header values as UTF-8 bytes."""
        path = probe.path + (f"?{urlencode(probe.query)}" if probe.query else "")
        headers: dict[str, Any] = {k: v.encode() for k, v in probe.headers.items()}
        if probe.token:
            headers["authorization"] = f"Bearer {probe.token}"
        return self.api.http.request(probe.method, path, content=probe.body, headers=headers).status_code

    def malformed(self) -> None:
        app = self.flow("http://127.0.0.1/callback")
        owner = self.mind("probe-owner")
        records, _ = self.source_backup()
        groups = {
            "OAuth token, revoke, register, authorize": list(malformed.oauth(app.client_id)),
            "OAuth consent": list(malformed.consent(owner, app.request_id())),
            "restore lines": list(malformed.restore(self.mind("probe-target"), records)),
        }
        if self.sample:
            groups["restore lines"] = restore_sample(groups["restore lines"])
        for name, probes in groups.items():
            failing = [probe.name for probe in probes if self.send_probe(probe) >= 500]
            self.sent += len(probes)
            self.server_errors += len(failing)
            said = f"{len(probes)} requests, {len(failing)} answered 5xx" + (
                f": {failing[:5]}" if failing else ""
            )
            self.check(f"7 malformed {name}", not failing, said)
        print(f"malformed input: {self.sent} requests sent, {self.server_errors} answered 5xx", flush=True)

    # ------------------------------------------------------------------ all

    def everything(self) -> list[Check]:
        attacks = {
            "1": self.surrogates,
            "2": self.removal,
            "3": self.redirects,
            "4-5": self.restores,
            "6": self.consistency,
            "7": self.malformed,
        }
        for item, attack in attacks.items():
            with self.attempt(item):
                attack()
        return self.checks


def restore_sample(probes: list[malformed.Probe]) -> list[malformed.Probe]:
    """Of restore's malformed probes, each body that is not lines of JSON, and per kind of line (and
    per line's `memory` object) the first probe of each type of value.

    Every probe goes to one handler through one door: over HTTP, what can differ from the handler
    called in process is how the body crosses the HTTP front, which depends on the kind of bytes it
    carries (a value's type, a body that is not JSON), not on which field holds them."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for probe in probes:
        where, _, value = probe.name.partition(": ")
        words = where.split()
        group = (words[1] + (" memory." if words[-1].startswith("memory.") else ""), value)
        if not value or group not in seen:
            seen.add(group)
            chosen.append(probe)
    return chosen


def run(url: str, sample: bool = False) -> list[Check]:
    return Attacks(url, sample).everything()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running service on loopback (default: start one)")
    parser.add_argument("--sample", action="store_true", help="a sample of restore's malformed lines")
    args = parser.parse_args()
    if args.url:
        checks = run(args.url.rstrip("/"), args.sample)
    else:
        with tempfile.TemporaryDirectory(prefix="synapse-attacks-") as workdir:
            runner = start_runner(Path(workdir) / "data", Path(workdir) / "runner.log", timeout=180)
            try:
                print(f"runner on {runner.url}: {runner.store}", file=sys.stderr, flush=True)
                checks = run(runner.url, args.sample)
            finally:
                runner.stop()
    broken = [c.name for c in checks if not c.held]
    print(
        f"\n{len(checks) - len(broken)} of {len(checks)} checks held"
        + (f"; BROKEN: {len(broken)}" if broken else "")
    )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
