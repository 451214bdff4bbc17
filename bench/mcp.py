"""Per-tool latency over `/mcp` against the same call over REST, on a real local runner.

It starts `python -m infra.local_runner` (what `make run` runs: the gateway, authorizer first, the
same handler files and Lambda events as on AWS, on DynamoDB Local, or moto without `java`) on a
fresh data dir, bound to 127.0.0.1 only, creates a mind with the dev JWT and seeds `--memories`
memories through `POST /memory/batch` with the Mind Key. Then, for each tool, it makes `--calls`
calls over each path, alternating which goes first so that drift in the machine's load falls on
both alike:

| tool | over `/mcp` (`tools/call`) | over REST |
|---|---|---|
| remember | `remember` {category, key, content, tags} | `POST /memory` |
| recall | `recall` {} | `GET /memory/recall` |
| search | `search` {query} | `GET /memory/search?q=` |
| fetch | `fetch` {id} | `GET /memory/{id}` |
| by_tag | `by_tag` {tag} | `GET /memory/by-tag?tag=` |
| list_expiring | `list_expiring` {within: 7d} | `GET /memory/expiring?within=7d` |
| history | `history` {id} | `GET /memory/{id}/history` |
| update | `update` {id, content} | `PUT /memory/{id}` |
| forget | `forget` {id} (the memories `remember` stored) | `DELETE /memory/{id}` |

Each `/mcp` call is one stateless POST of a JSON-RPC `tools/call` (MCP-Protocol-Version 2025-11-25,
no `initialize` first, as a stateless server allows), checked to be answered without `isError`;
each REST call is checked for its 2xx. Latency is the client's wall time for the whole HTTP round
trip (one keep-alive session for both paths), so the ratio is what MCP's framing costs over the
REST route: JSON-RPC parsing, the argument check against the tool's schema, the result wrapped as
text content, and one Lambda for all tools (one cold start, one import set) instead of one per
route. It prints p50 and p95 in ms for both and their ratios.

    nice .venv/bin/python bench/mcp.py [--calls 50] [--memories 200] [--store dynamodb-local|moto]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the e2e tests' runner harness starts the runner here too

from tests.support.runner import start_runner  # noqa: E402

TOOLS = ("remember", "recall", "search", "fetch", "by_tag", "list_expiring", "history", "update", "forget")
WORDS = ["coffee", "editor", "deploy", "python", "lambda", "schema", "travel", "music", "garden", "budget"]
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
Call = Callable[[int], None]


class Paths:
    """The two ways to the same operation, over one keep-alive HTTP session."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.session = url, requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"
        self.ids = itertools.count(1)

    def rest(self, method: str, path: str, body: Any = None, **query: Any) -> Any:
        answer = self.session.request(method, self.url + path, json=body, params=query or None, timeout=60)
        if not 200 <= answer.status_code < 300:
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text[:300]}")
        if "json" not in answer.headers.get("content-type", ""):
            return answer.text  # recall's plain text
        return answer.json()

    def tool(self, name: str, **arguments: Any) -> Any:
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}  # fmt: skip
        answer = self.session.post(
            self.url + "/mcp", data=json.dumps(message), headers=MCP_HEADERS, timeout=60
        )
        if answer.status_code != 200 or "result" not in answer.json():
            raise RuntimeError(f"tools/call {name}: {answer.status_code} {answer.text[:300]}")
        result = answer.json()["result"]
        if result["isError"]:
            raise RuntimeError(f"tools/call {name}: {result['content'][0]['text'][:300]}")
        text = result["content"][0]["text"]
        return json.loads(text) if text.startswith("{") else text


def create_mind(url: str, jwt: str) -> str:
    answer = requests.post(
        f"{url}/minds", json={"name": "MCP bench"}, headers={"Authorization": f"Bearer {jwt}"}, timeout=120
    )
    answer.raise_for_status()
    key: str = answer.json()["mind_key"]["key"]
    return key


def seed(paths: Paths, count: int) -> list[str]:
    """`count` memories (tagged `bench`, a quarter expiring within days), their ids."""
    rng, ids = random.Random(22), []
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3 * 86400))
    for start in range(0, count, 100):
        items = []
        for n in range(start, min(count, start + 100)):
            item = {"category": "fact", "key": f"seed_{n}", "tags": ["bench"],
                    "content": " ".join(rng.sample(WORDS, 4)) + f" number {n}"}  # fmt: skip
            if n % 4 == 0:
                item["expires_at"] = soon
            items.append(item)
        answer = paths.rest("POST", "/memory/batch", {"memories": items})
        ids += [result["memory"]["id"] for result in answer["results"]]
    return ids


def wait_searchable(paths: Paths, seeded: int, timeout: float = 120) -> None:
    """Until the indexer has caught up with the seed (search is fed from the table's stream)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(paths.rest("GET", "/memory/search", q="number", limit=100)["results"]) >= min(seeded, 100):
            return
        time.sleep(0.5)
    raise RuntimeError("the search index did not catch up with the seed")


def operations(paths: Paths, ids: list[str]) -> dict[str, tuple[Call, Call]]:
    """For each tool, (its /mcp call, its REST call), each taking the call's number."""
    stored: dict[str, list[str]] = {"mcp": [], "rest": []}
    history_of, updated = ids[1], {"mcp": ids[2], "rest": ids[3]}

    def remember_mcp(n: int) -> None:
        memory = paths.tool("remember", category="note", key=f"mcp_{n}", content=f"Over MCP {n}", tags=["b"])
        stored["mcp"].append(memory["id"])

    def remember_rest(n: int) -> None:
        body = {"category": "note", "key": f"rest_{n}", "content": f"Over REST {n}", "tags": ["b"]}
        stored["rest"].append(paths.rest("POST", "/memory", body)["id"])

    def word(n: int) -> str:
        return WORDS[n % len(WORDS)]

    return {
        "remember": (remember_mcp, remember_rest),
        "recall": (lambda n: paths.tool("recall"), lambda n: paths.rest("GET", "/memory/recall")),
        "search": (
            lambda n: paths.tool("search", query=word(n)),
            lambda n: paths.rest("GET", "/memory/search", q=word(n)),
        ),
        "fetch": (
            lambda n: paths.tool("fetch", id=ids[n % len(ids)]),
            lambda n: paths.rest("GET", f"/memory/{ids[n % len(ids)]}"),
        ),
        "by_tag": (
            lambda n: paths.tool("by_tag", tag="bench"),
            lambda n: paths.rest("GET", "/memory/by-tag", tag="bench"),
        ),
        "list_expiring": (
            lambda n: paths.tool("list_expiring", within="7d"),
            lambda n: paths.rest("GET", "/memory/expiring", within="7d"),
        ),
        "history": (
            lambda n: paths.tool("history", id=history_of),
            lambda n: paths.rest("GET", f"/memory/{history_of}/history"),
        ),
        "update": (
            lambda n: paths.tool("update", id=updated["mcp"], content=f"Updated over MCP {n}"),
            lambda n: paths.rest("PUT", f"/memory/{updated['rest']}", {"content": f"Updated over REST {n}"}),
        ),
        "forget": (
            lambda n: paths.tool("forget", id=stored["mcp"][n]),
            lambda n: paths.rest("DELETE", f"/memory/{stored['rest'][n]}"),
        ),
    }


def timed(call: Call, n: int) -> float:
    started = time.perf_counter()
    call(n)
    return time.perf_counter() - started


def measure(mcp: Call, rest: Call, numbers: range) -> tuple[list[float], list[float]]:
    """Call numbers `numbers` over both paths, alternating which goes first; their wall times."""
    over_mcp, over_rest = [], []
    for n in numbers:
        if n % 2:
            over_rest.append(timed(rest, n))
            over_mcp.append(timed(mcp, n))
        else:
            over_mcp.append(timed(mcp, n))
            over_rest.append(timed(rest, n))
    return over_mcp, over_rest


def p(samples: list[float], percent: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[percent - 1] * 1000


def table(results: dict[str, tuple[list[float], list[float]]]) -> str:
    head = "| tool | calls | /mcp p50 | /mcp p95 | REST p50 | REST p95 | p50 ratio | p95 ratio |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for tool, (over_mcp, over_rest) in results.items():
        m50, m95, r50, r95 = p(over_mcp, 50), p(over_mcp, 95), p(over_rest, 50), p(over_rest, 95)
        lines.append(
            f"| {tool} | {len(over_mcp)} | {m50:.1f} | {m95:.1f} | {r50:.1f} | {r95:.1f} "
            f"| {m50 / r50:.2f}x | {m95 / r95:.2f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=50, help="calls per tool and path (default 50)")
    parser.add_argument("--memories", type=int, default=200, help="memories seeded first (default 200)")
    parser.add_argument("--store", help="SYNAPSE_LOCAL_STORE for the runner (default: the runner's)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per tool and path first")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="synapse-bench-mcp-") as workdir:
        env = {"SYNAPSE_LOCAL_STORE": args.store} if args.store else {}
        runner = start_runner(Path(workdir) / "data", Path(workdir) / "runner.log", env, timeout=180)
        try:
            assert urlsplit(runner.url).hostname == "127.0.0.1", runner.url  # loopback only
            print(f"runner on {runner.url}: {runner.store}", file=sys.stderr, flush=True)
            paths = Paths(runner.url, create_mind(runner.url, runner.jwt))
            ids = seed(paths, args.memories)
            wait_searchable(paths, len(ids))
            ops = operations(paths, ids)
            results = {}
            for tool in TOOLS:  # numbered calls: forget deletes each memory remember stored once
                mcp, rest = ops[tool]
                measure(mcp, rest, range(args.warmup))
                results[tool] = measure(mcp, rest, range(args.warmup, args.warmup + args.calls))
                print(f"{tool}: done", file=sys.stderr, flush=True)
            print(
                f"\n{runner.store}, {args.memories} memories seeded, {args.calls} calls per tool and path\n"
            )
            print(table(results))
        finally:
            runner.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
