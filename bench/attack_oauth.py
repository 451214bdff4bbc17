"""Issue 32, item 3, replayed against a running Synapse (`make run`): do OAuth redirects go only
where a client registered? Each attack prints `held` or `broken`.

1. backslash: a client registered with `http://127.0.0.1/callback` asks for
   `http://127.0.0.2:9999\\@127.0.0.1/callback` (Python reads 127.0.0.1, a browser 127.0.0.2).
2. crlf-register: registering a redirect URI with CR/LF (a header injection in `Location`).
3. control-register: TAB, NUL, a leading space, a backslash in a registered URI.
4. error-redirect: a self-registered https client sends a faulty request (another response_type):
   is the browser sent to the client's site at once?
5. revoke-other: one client revokes another client's refresh token (RFC 7009 §2.1).

It starts its own runner on a fresh data dir (or uses `--url` and `--jwt` of one already running)
and exits 1 if any attack is broken.

    .venv/bin/python bench/attack_oauth.py [--url http://127.0.0.1:3000 --jwt <dev JWT>]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the e2e tests' runner harness starts the runner here too

from tests.support.runner import start_runner  # noqa: E402

TIMEOUT = 30


class Target:
    def __init__(self, url: str, jwt: str) -> None:
        self.url, self.jwt = url.rstrip("/"), jwt

    def register(self, *uris: str) -> requests.Response:
        body = {"client_name": "Attack", "redirect_uris": list(uris)}
        return requests.post(f"{self.url}/oauth/register", json=body, timeout=TIMEOUT)

    def authorize(self, client_id: str, redirect_uri: str, **overrides: str) -> requests.Response:
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": "st",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **overrides,
        }
        return requests.get(
            f"{self.url}/oauth/authorize", params=params, allow_redirects=False, timeout=TIMEOUT
        )

    def refresh_token(self, mind_id: str) -> tuple[str, str]:
        """A client with a grant on the mind: its id and refresh token."""
        callback = "http://127.0.0.1:9/cb"
        client_id = self.register(callback).json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        started = self.authorize(client_id, callback, code_challenge=challenge)
        request_id = started.headers["location"].rsplit("/", 1)[1]
        decided = requests.post(
            f"{self.url}/oauth/requests/{request_id}",
            json={"approve": True, "mind_id": mind_id, "scopes": ["read"]},
            headers={"Authorization": f"Bearer {self.jwt}"},
            timeout=TIMEOUT,
        ).json()
        code = parse_qs(urlsplit(decided["redirect_to"]).query)["code"][0]
        fields = {
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "code_verifier": verifier,
        }
        tokens = requests.post(f"{self.url}/oauth/token", data=fields, timeout=TIMEOUT).json()
        return client_id, str(tokens["refresh_token"])


def backslash(target: Target) -> bool:
    client_id = target.register("http://127.0.0.1/callback").json()["client_id"]
    answer = target.authorize(client_id, "http://127.0.0.2:9999\\@127.0.0.1/callback")
    return answer.status_code == 400 and "location" not in answer.headers


def crlf_register(target: Target) -> bool:
    answer = target.register("http://127.0.0.1:9/cb\r\nSet-Cookie: session=attacker")
    return answer.status_code == 400


def control_register(target: Target) -> bool:
    uris = (
        "https://ok.example/c\tb",
        "https://ok.example/cb\x00",
        " https://ok.example/cb",
        "https://ok.example/a\\b",
    )
    return all(target.register(uri).status_code == 400 for uri in uris)


def error_redirect(target: Target) -> bool:
    client_id = target.register("https://phish.example/cb").json()["client_id"]
    answer = target.authorize(client_id, "https://phish.example/cb", response_type="token")
    return not answer.headers.get("location", "").startswith("https://phish.example")


def revoke_other(target: Target) -> bool:
    created = requests.post(
        f"{target.url}/minds",
        json={"name": "Attack mind"},
        headers={"Authorization": f"Bearer {target.jwt}"},
        timeout=TIMEOUT,
    ).json()
    mind_id = created["mind"]["id"]
    _, victim_token = target.refresh_token(mind_id)
    attacker_id, _ = target.refresh_token(mind_id)
    requests.post(
        f"{target.url}/oauth/revoke", data={"token": victim_token, "client_id": attacker_id}, timeout=TIMEOUT
    )
    grants = requests.get(
        f"{target.url}/minds/{mind_id}/grants",
        headers={"Authorization": f"Bearer {target.jwt}"},
        timeout=TIMEOUT,
    ).json()["grants"]
    return len(grants) == 2  # the victim's grant is still there


ATTACKS: dict[str, Callable[[Target], bool]] = {
    "backslash": backslash,
    "crlf-register": crlf_register,
    "control-register": control_register,
    "error-redirect": error_redirect,
    "revoke-other": revoke_other,
}


def run(target: Target) -> bool:
    held = True
    for name, attack in ATTACKS.items():
        result = attack(target)
        held &= result
        print(f"{name:18} {'held' if result else 'broken'}")
    return held


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a running Synapse (default: start one)")
    parser.add_argument("--jwt", help="its dev user's JWT (with --url)")
    args = parser.parse_args()
    if args.url:
        return 0 if run(Target(args.url, args.jwt or "")) else 1
    with tempfile.TemporaryDirectory(prefix="synapse-attack-oauth-") as workdir:
        runner = start_runner(Path(workdir) / "data", Path(workdir) / "runner.log", timeout=180)
        try:
            held = run(Target(runner.url, runner.jwt))
            errors = runner.server_errors()
            print(f"{'no-500':18} {'held' if not errors else 'broken: ' + '; '.join(errors)}")
            return 0 if held and not errors else 1
        finally:
            runner.stop()


if __name__ == "__main__":
    raise SystemExit(main())
