"""`make smoke URL=… TOKEN=…`: one pass through a deployed (or local) Synapse, cleaning up after itself.

    TOKEN=<a person's JWT> python -m infra.smoke https://api.example.com

Creates a mind (JWT), stores a memory with its new Mind Key, recalls it, waits (bounded) until search
finds it — the index follows the table's stream, so that takes a moment — and deletes the mind. Each
step prints one line; the exit code is 0 when every step passed, 1 when one failed (the mind is still
deleted), 2 when the URL or token is missing. Standard library only: it runs anywhere Python does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

REQUEST_TIMEOUT = 30.0
DEFAULT_SEARCH_WAIT = 60.0
POLL_INTERVAL = 1.0


class SmokeFailed(Exception):
    """A step got an answer it should not have."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Client:
    base: str
    opener: Callable[..., Any] = field(default=urllib.request.urlopen)

    def call(self, method: str, path: str, token: str, body: Any = None) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/plain"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)  # noqa: S310 - the operator's URL, checked to be http(s)
        try:
            with self.opener(request, timeout=REQUEST_TIMEOUT) as response:
                return Answer(response.status, response.read())
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.read())


def expect(answer: Answer, status: int, what: str) -> Answer:
    if answer.status != status:
        raise SmokeFailed(f"{what}: expected {status}, got {answer.status}: {answer.text[:300]}")
    return answer


@dataclass
class Smoke:
    client: Client
    token: str
    out: TextIO
    search_wait: float = DEFAULT_SEARCH_WAIT
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic

    def step(self, name: str, detail: str) -> None:
        print(f"ok    {name:<8} {detail}", file=self.out, flush=True)

    def run(self) -> None:
        word = f"smoke{uuid.uuid4().hex[:12]}"
        created = expect(
            self.client.call("POST", "/minds", self.token, {"name": f"synapse smoke {word}"}),
            201,
            "create mind",
        ).json()
        mind_id, key = created["mind"]["id"], created["mind_key"]["key"]
        self.step("create", f"mind {mind_id} and its first Mind Key")
        try:
            self._memory_round_trip(key, word)
        finally:
            expect(self.client.call("DELETE", f"/minds/{mind_id}", self.token), 204, "delete mind")
            self.step("delete", f"mind {mind_id}")

    def _memory_round_trip(self, key: str, word: str) -> None:
        content = f"Synapse smoke test memory {word}"
        body = {"category": "fact", "key": "smoke_test", "content": content, "tags": ["smoke"]}
        stored = expect(self.client.call("POST", "/memory", key, body), 201, "store memory").json()
        self.step("store", f"memory {stored['id']}")
        recalled = expect(self.client.call("GET", "/memory/recall", key), 200, "recall")
        if content not in recalled.text:
            raise SmokeFailed(f"recall: the stored memory is missing from:\n{recalled.text[:500]}")
        self.step("recall", "the stored memory is in the recall text")
        waited = self._search_until_found(key, word, stored["id"])
        self.step("search", f"found by its unique word after {waited:.1f} s")

    def _search_until_found(self, key: str, word: str, memory_id: str) -> float:
        start = self.monotonic()
        path = "/memory/search?" + urllib.parse.urlencode({"q": word})
        while True:
            answer = expect(self.client.call("GET", path, key), 200, "search")
            if [hit["memory"]["id"] for hit in answer.json()["results"]] == [memory_id]:
                return self.monotonic() - start
            if self.monotonic() - start >= self.search_wait:
                raise SmokeFailed(
                    f"search: memory {memory_id} not found within {self.search_wait:.0f} s "
                    "(is the indexer running? see its IteratorAge and failure-queue alarms)"
                )
            self.sleep(POLL_INTERVAL)


def main(
    argv: list[str] | None = None, out: TextIO = sys.stdout, opener: Callable[..., Any] | None = None
) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.smoke", description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", default=os.environ.get("URL", ""), help="the API's base URL")
    parser.add_argument("--search-wait", type=float, default=DEFAULT_SEARCH_WAIT, help="seconds (default 60)")
    args = parser.parse_args(argv)
    token = os.environ.get("TOKEN", "").strip()
    url = str(args.url).strip().rstrip("/")
    if urllib.parse.urlsplit(url).scheme not in {"http", "https"} or not token:
        print("usage: TOKEN=<JWT> python -m infra.smoke https://<api> (make smoke URL=… TOKEN=…)", file=out)
        return 2
    print(f"Synapse smoke test against {url}", file=out, flush=True)
    client = Client(url) if opener is None else Client(url, opener)
    try:
        Smoke(client, token, out, search_wait=args.search_wait).run()
    except (SmokeFailed, urllib.error.URLError, OSError, KeyError, ValueError) as error:
        print(f"FAIL  {error}", file=out, flush=True)
        return 1
    print("PASS  create, store, recall, search, delete", file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
