"""The client's shared core without a server: when it retries, how it reads errors and builds
queries, where configuration comes from, and what recall and search send and read (a stand-in
server: httpx's MockTransport)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import synapse_client
from synapse_client import AsyncSynapse, SearchPage, Synapse, _agent_tools, mcp_server, ops
from synapse_client._core import Credentials, Retry, error_from, query, retry_after, tls
from synapse_client.config import ConfigError, resolve
from synapse_client.errors import NotFound, ServerError, TransportError, ValidationFailed
from synapse_client.models import RecallText


def answer(status: int, headers: dict[str, str] | None = None, json: object = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, json=json)


def test_retry_honours_retry_after_and_its_bounds() -> None:
    retry = Retry(attempts=2, max_wait=10)
    read = ops.get("mem_x")
    assert 3 <= (retry.delay(read, 0, answer(429, {"Retry-After": "3"})) or 0) < 3.6
    assert retry.delay(read, 2, answer(429, {"Retry-After": "3"})) is None  # attempts used up
    assert retry.delay(read, 0, answer(429, {"Retry-After": "30"})) is None  # longer than max_wait
    assert retry.delay(read, 0, answer(404)) is None
    backoff = retry.delay(read, 1, answer(503))
    assert backoff is not None and 0 <= backoff <= 1.0  # full jitter up to 0.5 s x 2


def test_server_errors_are_retried_only_where_repeating_is_safe() -> None:
    retry = Retry()
    assert retry.delay(ops.create_mind("x"), 0, answer(502)) is None
    assert retry.delay(ops.create_mind("x"), 0, answer(429)) is not None
    assert retry.delay(ops.remember("fact", "k", "c"), 0, answer(504)) is not None
    assert retry.delay(ops.remember_batch([]), 0, answer(503)) is None
    assert retry.delay(ops.remember_batch([], idempotency_key="k"), 0, answer(503)) is not None


def test_a_conflict_that_says_when_to_retry_is_retried_and_so_is_no_answer_where_safe() -> None:
    retry = Retry()
    busy = answer(409, {"Retry-After": "1"}, {"error": {"code": "conflict", "message": "busy"}})
    assert retry.delay(ops.create_mind("x"), 0, busy) is not None
    assert (
        retry.delay(ops.create_mind("x"), 0, answer(409, json={"error": {"code": "limit_reached"}})) is None
    )
    broke_off = httpx.ReadError("connection reset")
    assert retry.after_failure(ops.get("mem_x"), 0, broke_off) is not None
    assert retry.after_failure(ops.get("mem_x"), 4, broke_off) is None
    assert retry.after_failure(ops.create_mind("x"), 0, broke_off) is None


def test_a_refused_connection_is_not_retried_since_nothing_listens_there() -> None:
    # Given a safe call and attempts to spare, When the connection is refused, Then no retry waits
    assert Retry().after_failure(ops.get("mem_x"), 0, httpx.ConnectError("refused")) is None


def test_a_dead_port_is_reported_at_once_not_after_backoff() -> None:
    # Given a client on a port where nothing listens, with the default retry policy
    client = Synapse("http://127.0.0.1:9", mind_key="mk_x")
    slept: list[float] = []
    client._sleep = slept.append  # type: ignore[assignment]
    # When it searches, Then it says so after one try, without waiting
    with client, pytest.raises(TransportError, match="Could not reach Synapse"):
        client.search("tea")
    assert slept == []


def test_an_http_url_gets_a_tls_context_that_trusts_nothing_and_https_the_ca_bundle() -> None:
    # An http:// client never opens TLS, so it loads no CA bundle; were TLS attempted, it would fail
    plain = tls("http://127.0.0.1:8000")
    assert isinstance(plain, ssl.SSLContext) and plain.get_ca_certs() == []
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    # https (any case) keeps httpx's default verification
    assert tls("https://abc.execute-api.eu-central-1.amazonaws.com") is True
    assert tls("HTTPS://example.com") is True


def test_the_cli_parses_and_refuses_without_loading_httpx_or_pydantic() -> None:
    # Given a fresh interpreter (this one has them loaded already)
    script = """
import sys
import synapse_client
from synapse_client import cli
cli.parser().parse_args(["search", "coffee"])
try:
    cli.main(["remember", "facts", "k", "c"])
except SystemExit as usage:
    assert usage.code == 2
print(sorted(name for name in ("httpx", "pydantic", "asyncio") if name in sys.modules))
"""
    # When the package and the CLI's parser are imported and a usage error is made
    done = subprocess.run(  # noqa: S603 — this interpreter
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    # Then neither httpx nor pydantic (nor asyncio) was imported: a command imports what it needs
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    # And every name the package exports is there, imported on first use
    assert all(getattr(synapse_client, name) is not None for name in synapse_client.__all__)


def test_retry_after_reads_seconds_and_http_dates() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after(answer(429, {"Retry-After": later})) or 0) <= 30
    assert retry_after(answer(429, {"Retry-After": "soon"})) is None
    assert retry_after(answer(429)) is None


def test_errors_are_read_from_the_envelope_or_the_status() -> None:
    envelope = {"error": {"code": "validation_error", "message": "key: bad", "details": [{"field": "key"}]}}
    error = error_from(answer(422, json=envelope | {"request_id": "r1"}))
    assert isinstance(error, ValidationFailed)
    assert (error.status, error.code, error.message, error.details, error.request_id) == (
        422,
        "validation_error",
        "key: bad",
        [{"field": "key"}],
        "r1",
    )
    assert isinstance(error_from(answer(404, json={})), NotFound)
    bare = error_from(httpx.Response(502, text="<html>Bad Gateway</html>"))
    assert isinstance(bare, ServerError) and bare.message == "HTTP 502 Bad Gateway"


def test_queries_drop_nones_repeat_lists_and_spell_booleans() -> None:
    assert query({"a": None, "b": ["x", "y"], "c": True, "d": 5}) == [
        ("b", "x"),
        ("b", "y"),
        ("c", "true"),
        ("d", "5"),
    ]


def test_credentials_pick_one_and_a_person_names_the_mind() -> None:
    assert Credentials(token="t", mind_id="m_1").headers()["X-Mind-Id"] == "m_1"
    assert "X-Mind-Id" not in Credentials(mind_key="mk_1", mind_id="m_1").headers()
    with pytest.raises(ValueError, match="exactly one"):
        Credentials()


def test_configuration_precedence(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[default]\nurl = "http://file"\nmind_key = "mk_file"\nmind_id = "m_file"\n')
    env = {"SYNAPSE_CONFIG": str(config)}
    assert resolve({}, env).url == "http://file"
    from_env = resolve({}, env | {"SYNAPSE_URL": "http://env", "SYNAPSE_TOKEN": "jwt"})
    assert (from_env.url, from_env.token, from_env.mind_key, from_env.mind_id) == (
        "http://env",
        "jwt",
        None,
        "m_file",
    )
    from_flags = resolve({"url": "http://flag", "mind_key": "mk_flag"}, env | {"SYNAPSE_TOKEN": "jwt"})
    assert (from_flags.url, from_flags.mind_key, from_flags.token) == ("http://flag", "mk_flag", None)
    with pytest.raises(ConfigError, match="No profile"):
        resolve({}, env, profile="other")
    with pytest.raises(ConfigError, match="No Synapse URL"):
        resolve({}, {"SYNAPSE_CONFIG": str(tmp_path / "none.toml")})


# ---------------------------------------------------------------- recall and search, against a stand-in

MEMORY = {
    "id": "mem_coffee",
    "mind_id": "m_1",
    "category": "preference",
    "key": "coffee_order",
    "content": "Drinks an oat flat white",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}
RECALL_JSON = {"mind": {"id": "m_1", "name": "M"}, "total": 1, "verified": 0, "unverified": 1}
MESSAGE = "What coffee does he drink?"


def stand_in(answer: Callable[[httpx.Request], httpx.Response]) -> tuple[list[httpx.Request], Synapse]:
    """A sync client whose server is `answer`, and the list of the requests it got."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answer(request)

    http = httpx.Client(base_url="http://synapse.test", transport=httpx.MockTransport(handle))
    return seen, Synapse("http://synapse.test", mind_key="mk_test", http=http)


def recall_answer(request: httpx.Request, extra: dict[str, Any] | None = None) -> httpx.Response:
    if request.url.params.get("format") == "json":
        return httpx.Response(200, json=RECALL_JSON | {"memories": [MEMORY]} | (extra or {}))
    return httpx.Response(200, text="Mind: M\n")


def test_recall_sends_the_message_as_q_and_reads_relevant() -> None:
    seen, client = stand_in(lambda request: recall_answer(request, {"relevant": ["mem_coffee"]}))
    with client:
        assert client.recall(query=MESSAGE).text == "Mind: M\n"
        placed = client.recall_json(query=MESSAGE, category="preference", max_chars=800)
        client.recall()
        client.recall(query="")
    assert placed.relevant == ["mem_coffee"] and [m.id for m in placed.memories] == ["mem_coffee"]
    assert [r.url.path for r in seen] == ["/memory/recall"] * 4
    assert [r.url.params.get("q") for r in seen] == [MESSAGE, MESSAGE, None, None]
    assert seen[1].url.params.multi_items() == [
        ("category", "preference"),
        ("max_chars", "800"),
        ("q", MESSAGE),
        ("format", "json"),
    ]


def test_an_older_servers_recall_json_without_relevant_still_parses() -> None:
    _, client = stand_in(recall_answer)
    with client:
        older = client.recall_json(query=MESSAGE)
    assert older.relevant == [] and "relevant" not in older.model_fields_set


def test_the_async_client_sends_q_on_recall_too() -> None:
    seen: list[httpx.Request] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return recall_answer(request, {"relevant": []})

    async def scenario() -> None:
        http = httpx.AsyncClient(base_url="http://synapse.test", transport=httpx.MockTransport(handle))
        async with AsyncSynapse("http://synapse.test", mind_key="mk_test", http=http) as client:
            await client.recall(query=MESSAGE)
            assert (await client.recall_json(query=MESSAGE)).relevant == []

    asyncio.run(scenario())
    assert [r.url.params.get("q") for r in seen] == [MESSAGE, MESSAGE]


def test_search_reads_terms_matched_and_coverage_and_an_older_answer_still_parses() -> None:
    hit = {"memory": MEMORY, "score": 2.5, "snippet": "**Drinks** an oat flat white"}
    newer = {
        "results": [hit | {"matched": ["drink"], "coverage": 0.5}],
        "terms": ["coffee", "drink"],
        "next_cursor": "c2",
    }
    seen, client = stand_in(lambda request: httpx.Response(200, json=newer))
    with client:
        found = client.search(MESSAGE, category="preference", limit=5)
    assert seen[0].url.path == "/memory/search"
    assert seen[0].url.params.multi_items() == [("q", MESSAGE), ("category", "preference"), ("limit", "5")]
    assert isinstance(found, SearchPage) and (found.terms, found.next_cursor) == (["coffee", "drink"], "c2")
    assert (found.items[0].matched, found.items[0].coverage, found.items[0].score) == (["drink"], 0.5, 2.5)
    # An older server sends neither terms nor matched nor coverage: the defaults stand in
    older_answer = {"results": [hit], "next_cursor": None}
    _, older_client = stand_in(lambda request: httpx.Response(200, json=older_answer))
    with older_client:
        older = older_client.search("drinks")
    assert older.terms == [] and older.next_cursor is None
    assert (older.items[0].matched, older.items[0].coverage) == ([], None)


LATE = datetime(2026, 12, 7, 23, 30, tzinfo=UTC)  # a fixed now: still Monday in UTC, Tuesday in Berlin


def clock_answer(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/memory/recall":
        return recall_answer(request, {"relevant": []})
    return httpx.Response(200, json={"results": [], "terms": [], "next_cursor": None})


def clocks(seen: list[httpx.Request]) -> list[tuple[str | None, str | None]]:
    return [(r.url.params.get("now"), r.url.params.get("tz")) for r in seen]


def test_search_and_recall_send_the_askers_now_and_zone() -> None:
    # Given a client whose server notes what it is sent
    seen, client = stand_in(clock_answer)
    # When it searches and recalls with a fixed now (a datetime, a date, a string) and the user's zone
    with client:
        client.search("What is on today?", now=LATE, tz="Europe/Berlin")
        client.recall(query="anything tomorrow?", now=date(2026, 12, 3), tz="Europe/Berlin")
        client.recall_json(now="2026-12-03T10:00:00Z")
        client.search("What is on today?")
    # Then each carries them as now= (ISO 8601) and tz=, and a call without them sends neither
    assert clocks(seen) == [
        ("2026-12-07T23:30:00+00:00", "Europe/Berlin"),
        ("2026-12-03", "Europe/Berlin"),
        ("2026-12-03T10:00:00Z", None),
        (None, None),
    ]


def test_the_agent_tools_and_the_mcp_server_pass_the_askers_clock_on() -> None:
    # Given the framework adapters' tools (blocking client) and `synapse mcp`'s (async client)
    seen, client = stand_in(clock_answer)
    asked: list[httpx.Request] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return clock_answer(request)

    async def over_mcp() -> None:
        http = httpx.AsyncClient(base_url="http://synapse.test", transport=httpx.MockTransport(handle))
        async with AsyncSynapse("http://synapse.test", mind_key="mk_test", http=http) as agent:
            await mcp_server.CALLS["search"](
                agent, {"query": "today?", "now": "2026-12-07T23:30:00Z", "tz": "Asia/Tokyo"}
            )
            await mcp_server.CALLS["recall"](agent, {"now": "2026-12-03", "tz": "Asia/Tokyo"})

    # When a model calls search and recall with now and tz
    with client:
        _agent_tools.run(
            client, "search", {"query": "today?", "now": "2026-12-07T23:30:00Z", "tz": "Europe/Berlin"}
        )
        _agent_tools.run(client, "recall", {"now": "2026-12-03", "tz": "Europe/Berlin", "query": None})
    asyncio.run(over_mcp())
    # Then both send them as REST's now= and tz=
    assert clocks(seen) == [("2026-12-07T23:30:00Z", "Europe/Berlin"), ("2026-12-03", "Europe/Berlin")]
    assert clocks(asked) == [("2026-12-07T23:30:00Z", "Asia/Tokyo"), ("2026-12-03", "Asia/Tokyo")]


def test_recall_text_names_each_surfaces_own_way_to_what_it_left_out() -> None:
    # Given a recall cut short, as REST words it
    cut = RecallText(
        text="Mind: M\n\n[001] fact (NORMAL) [verified]\n  k\n  c\n\n1 more memory left out; "
        "GET /memory/search finds it.\n"
    )
    # Then an agent's tools and the CLI name their own way on, and a whole recall is left as it is
    assert cut.naming("the search tool").endswith("\n1 more memory left out; the search tool finds it.\n")
    assert cut.naming("`synapse search`").endswith("; `synapse search` finds it.\n")
    assert RecallText(text="Mind: M\nMemories: 0 total\n").naming("x") == "Mind: M\nMemories: 0 total\n"


def test_a_write_answered_without_content_reads_as_a_memory() -> None:
    # Given a write-only key's answer: the memory without what it says (docs/auth.md#what-answers-show)
    withheld = {
        "id": "mem_a", "mind_id": "m_a", "category": "fact", "key": "pin", "priority": "normal",
        "source": "agent", "verified": False, "confidence": 0.7, "expires_at": None,
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z", "version": 1,
        "verified_at": None, "verified_by": None, "pending_proposal": None, "expired": False,
    }  # fmt: skip
    call = ops.remember("fact", "pin", "My PIN is 4821")
    # When the client reads it
    memory = call.parse(answer(201, json=withheld))
    # Then it is the memory, its content and tags empty
    assert (memory.id, memory.version, memory.content, memory.tags) == ("mem_a", 1, "", [])


def test_similar_asks_what_a_stored_memory_may_replace_and_reads_a_model_failure() -> None:
    # Given a server that names one older memory for a write, and then says its model failed
    older = MEMORY | {"id": "mem_old", "key": "coffee_old"}
    candidate = {
        "id": "mem_old",
        "key": "coffee_old",
        "similarity": 0.71,
        "relation": "related",
        "memory": older,
    }
    answers = iter(
        [{"id": "mem_coffee", "similar": [candidate]}, {"id": "mem_coffee", "similar_unavailable": True}]
    )
    seen, client = stand_in(lambda request: httpx.Response(200, json=next(answers)))
    # When the client asks twice
    with client:
        found = client.similar("mem_coffee")
        failed = client.similar("mem_coffee")
    # Then it asked GET /memory/{id}/similar and read the candidate with its memory
    assert [(r.method, r.url.path) for r in seen] == [("GET", "/memory/mem_coffee/similar")] * 2
    assert [(s.id, s.relation, s.memory.key) for s in found.similar] == [("mem_old", "related", "coffee_old")]
    assert not found.similar_unavailable
    # And a model failure reads as unavailable, with nothing named
    assert failed.similar_unavailable and failed.similar == []
