"""Tracing switched ON, as in AWS, for the indexer and the search handler: X-Ray sees the AWS calls
(botocore) and no SQLite statement. An in-process emitter stands in for the X-Ray daemon.

Everything tracing changes is process-wide (the SDK's enabled flag, the recorder's emitter, powertools'
shared Tracer config, the botocore methods the SDK wraps), so the fixture puts each back: the next
test in this xdist worker runs untraced, exactly as before.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import aws_xray_sdk
import botocore.client
import botocore.endpoint
import pytest
import wrapt
from aws_lambda_powertools import Tracer
from aws_xray_sdk.core import patcher, xray_recorder
from synapse.core import observability
from synapse.index import readers

from infra.gateway import LambdaContext
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

# The SDK's own default (on unless AWS_XRAY_SDK_ENABLED says otherwise), before any test here runs.
SDK_ENABLED_AT_IMPORT = aws_xray_sdk.global_sdk_config.sdk_enabled()


@dataclass
class Emitter:
    """Receives what the recorder would send to the daemon over UDP, as the JSON it would send."""

    documents: list[dict[str, Any]] = field(default_factory=list)

    def send_entity(self, entity: Any) -> None:
        self.documents.append(json.loads(entity.serialize()))

    def set_daemon_address(self, address: str | None) -> None:
        pass


def subsegments(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for child in document.get("subsegments", []):
        yield child
        yield from subsegments(child)


@dataclass
class Tracing:
    emitter: Emitter

    @contextmanager
    def invocation(self, name: str) -> Iterator[None]:
        """One traced invocation: the segment Lambda opens around a handler, always sampled."""
        xray_recorder.begin_segment(name, sampling=1)
        try:
            yield
        finally:
            xray_recorder.end_segment()

    def traced(self, name: str) -> list[dict[str, Any]]:
        """Every subsegment sent for the segment(s) called `name`, streamed ones included (the
        recorder sends finished subsegments of a busy segment on their own, with its trace id)."""
        documents = self.emitter.documents
        traces = {d["trace_id"] for d in documents if d.get("name") == name and d.get("type") != "subsegment"}
        found: list[dict[str, Any]] = []
        for document in documents:
            if document.get("trace_id") in traces:
                own = [document] if document.get("type") == "subsegment" else []
                found += [*own, *subsegments(document)]
        return found


def is_sql(subsegment: dict[str, Any]) -> bool:
    return "sql" in subsegment or "sqlite" in str(subsegment.get("name", "")).lower()


def is_aws(subsegment: dict[str, Any], service: str) -> bool:
    return subsegment.get("namespace") == "aws" and subsegment.get("name") == service


@pytest.fixture
def tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Tracing]:
    """The service's Tracer built as in Lambda with tracing on, sending to an in-process emitter."""
    shared_config = Tracer._config  # powertools' Tracer shares one config across instances
    original_emitter = xray_recorder.emitter
    was_patched = hasattr(botocore.client, "_xray_enabled")
    # What patching replaces, recorded so that monkeypatch puts the originals back afterwards
    monkeypatch.setattr(
        botocore.client.BaseClient, "_make_api_call", vars(botocore.client.BaseClient)["_make_api_call"]
    )
    monkeypatch.setattr(
        botocore.endpoint.Endpoint, "prepare_request", botocore.endpoint.Endpoint.prepare_request
    )
    monkeypatch.setattr(sqlite3, "connect", sqlite3.connect)
    monkeypatch.setattr(patcher, "_PATCHED_MODULES", set(patcher._PATCHED_MODULES))
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "false")
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")  # powertools traces only inside Lambda
    monkeypatch.delenv("AWS_XRAY_SDK_ENABLED", raising=False)
    emitter = Emitter()
    was_enabled = aws_xray_sdk.global_sdk_config.sdk_enabled()
    try:
        aws_xray_sdk.global_sdk_config.set_sdk_enabled(True)
        xray_recorder.emitter = emitter
        Tracer._reset_config()
        Tracer(service=observability.SERVICE, patch_modules=observability.TRACED_MODULES)
        yield Tracing(emitter)
    finally:
        xray_recorder.clear_trace_entities()
        xray_recorder.emitter = original_emitter
        aws_xray_sdk.global_sdk_config.set_sdk_enabled(was_enabled)
        Tracer._config = shared_config
        if not was_patched and hasattr(botocore.client, "_xray_enabled"):
            delattr(botocore.client, "_xray_enabled")
        for cached in readers._readers.open.values():  # a connection opened while traced
            cached.connection.close()
        readers._readers.open.clear()


def index_and_search(api: Api, tracing: Tracing, pump: Pump) -> MindHandle:
    with tracing.invocation("writes"):  # in Lambda every handler runs inside a segment
        mind = api.create_mind()
        for n in range(20):
            assert api.store(mind, key=f"city_{n}", content=f"Visited Berlin, trip {n}").status == 201
    with tracing.invocation("indexer"):
        assert pump.run_once() >= 20
    with tracing.invocation("search"):
        answer = api.call("GET", "/memory/search", query={"q": "berlin", "limit": 5}, **as_agent(mind))
    assert answer.status == 200, answer.text
    assert len(answer.json()["results"]) == 5
    return mind


def test_the_service_tracer_is_built_on_the_first_traced_invocation_patching_botocore_only(
    tracing: Tracing,
) -> None:
    # Given tracing on, as in AWS, and an entry point
    @observability.entry_point()
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {}

    # When it is invoked
    with tracing.invocation("first"):
        handler({}, LambdaContext("first"))
    # Then its invocation was traced by the service's Tracer, built with exactly these modules
    assert any(s["name"] == "## handler" for s in tracing.traced("first"))
    assert observability.TRACED_MODULES == ("botocore",)
    assert observability.service_tracer() is observability.service_tracer()
    assert Tracer._config["patch_modules"] == ("botocore",)


def test_indexer_and_search_send_aws_subsegments_and_no_sqlite_ones(
    api: Api, tracing: Tracing, pump: Pump
) -> None:
    # Given tracing on, as in AWS, with the service's Tracer
    assert {"botocore"} == patcher._PATCHED_MODULES
    # When memories are indexed and searched
    index_and_search(api, tracing, pump)
    indexer, search = tracing.traced("indexer"), tracing.traced("search")
    # Then both invocations were traced: the handler's subsegment, and the DynamoDB calls under it
    assert any(s["name"] == "## handler" for s in indexer), indexer
    assert any(is_aws(s, "dynamodb") for s in search), search
    # And not one SQLite statement became a subsegment, in either
    assert [s for s in indexer + search if is_sql(s)] == []
    assert sum(1 for s in search if is_aws(s, "dynamodb")) <= 5  # a few AWS calls, not one per row


def test_the_sdk_default_would_have_traced_every_sqlite_statement(
    api: Api, tracing: Tracing, pump: Pump
) -> None:
    # The control for the test above: with the X-Ray SDK's sqlite3 patch on (what Tracer's default,
    # patch_all, does), the same work sends SQL subsegments: the detector sees them when they exist.
    patcher.patch(("sqlite3",))
    index_and_search(api, tracing, pump)
    sql = [s for s in tracing.traced("indexer") + tracing.traced("search") if is_sql(s)]
    assert len(sql) >= 20


def test_tracing_is_off_again_after_a_traced_test() -> None:
    # Runs after the tests above in one process (file order), or on another xdist worker (worksteal
    # moves tests) where none ran: either way the process is as untraced as it was at import
    assert aws_xray_sdk.global_sdk_config.sdk_enabled() is SDK_ENABLED_AT_IMPORT
    assert not hasattr(botocore.client, "_xray_enabled")
    assert "sqlite3" not in patcher._PATCHED_MODULES
    for patched in (sqlite3.connect, vars(botocore.client.BaseClient)["_make_api_call"]):
        assert not isinstance(patched, wrapt.ObjectProxy)


def _parents(documents: list[dict[str, Any]]) -> dict[str, str]:
    """Each subsegment's id -> its parent's id, whether it was sent inside its parent or on its own."""
    parents: dict[str, str] = {}

    def walk(document: dict[str, Any]) -> None:
        for child in document.get("subsegments", []):
            parents[child["id"]] = document["id"]
            walk(child)

    for document in documents:
        if document.get("type") == "subsegment" and "parent_id" in document:
            parents[document["id"]] = document["parent_id"]
        walk(document)
    return parents


def test_the_indexers_threads_send_their_aws_calls_under_the_invocations_handler(
    api: Api, tracing: Tracing, pump: Pump
) -> None:
    # Given three new minds with a memory each: one batch of three minds, written on the indexer's
    # threads, each of which asks DynamoDB whether its new mind still exists (GetItem)
    with tracing.invocation("writes"):
        for n in range(3):
            mind = api.create_mind(f"user-{n}")
            assert api.store(mind, key="city", content="Visited Berlin").status == 201
    # When the indexer indexes them in one invocation
    with tracing.invocation("indexer"):
        assert pump.run_once() >= 3
    # Then the three GetItems are subsegments of the invocation's handler, not lost with the thread
    indexer = tracing.traced("indexer")
    (handler,) = [s for s in indexer if s["name"] == "## handler"]
    reads = [s for s in indexer if is_aws(s, "dynamodb") and s.get("aws", {}).get("operation") == "GetItem"]
    parents = _parents(tracing.emitter.documents)
    assert len(reads) == 3, reads
    assert {parents[s["id"]] for s in reads} == {handler["id"]}
