"""The OpenAPI document: generated from the code, committed as openapi.json, served publicly.

It must not drift: every route in template.yaml (`routes.ROUTES`, kept equal to it by
tests/unit/test_routes.py) has an operation, and the committed file is exactly what the generator
writes. Schemathesis then holds the service to it (tests/e2e/test_contract.py).
"""

from __future__ import annotations

import json
from typing import Any

from openapi_spec_validator import validate
from synapse.api import routes
from synapse.openapi import document as openapi

from infra import template
from tests.support.api import Api

COMMITTED = template.ROOT / "functions" / "openapi" / "openapi.json"


def _operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}


def test_every_route_has_an_operation_and_every_operation_a_route() -> None:
    # Given the routes the template declares and the generator's table
    declared = set(routes.ROUTES)
    # Then each has the other
    assert sorted(declared - set(openapi.OPERATIONS)) == [], (
        "add an Op to synapse.openapi.document.OPERATIONS"
    )
    assert sorted(set(openapi.OPERATIONS) - declared) == [], "an Op for a route template.yaml lacks"
    # And the document holds one operation per route
    assert _operations(openapi.document()) == declared


def test_the_committed_openapi_json_is_what_the_code_generates() -> None:
    assert COMMITTED.read_text() == openapi.render(), "openapi.json is stale: run `make openapi`"
    # And openapi.json at the root, where people look for it, is that file
    assert (template.ROOT / "openapi.json").resolve() == COMMITTED.resolve()


def test_the_document_is_valid_openapi_3_1() -> None:
    document = json.loads(COMMITTED.read_text())
    assert document["openapi"].startswith("3.1")
    validate(document)  # raises on any violation


def test_operation_ids_are_unique() -> None:
    ids = [op.id for op in openapi.OPERATIONS.values()]
    assert len(ids) == len(set(ids))


OAUTH_ENDPOINTS = {"/oauth/register", "/oauth/authorize", "/oauth/token", "/oauth/revoke"}


def test_every_error_answer_is_the_error_envelope() -> None:
    # (MCP's answers, but the credential's 401, are JSON-RPC error objects instead; OAuth's
    # endpoints answer OAuth's error body, but for the 413, 414, 429 and 431 answered before they start)
    document = openapi.document()
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    json_rpc = {"application/json": {"schema": {"$ref": "#/components/schemas/JsonRpcAnswer"}}}
    oauth = {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthErrorAnswer"}}}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            errors = {s: r for s, r in operation["responses"].items() if int(s) >= 400}
            authenticated = bool(operation["security"]) or "Synapse-Signature" in json.dumps(operation)
            assert not authenticated or "401" in errors, f"{method} {path} documents no 401"
            if path in OAUTH_ENDPOINTS:
                expected = {
                    status: envelope if status in ("413", "414", "429", "431") else oauth for status in errors
                }
                assert {status: answer["content"] for status, answer in errors.items()} == expected, path
                continue
            expected = {status: json_rpc if path == "/mcp" else envelope for status in errors}
            expected["401"] = envelope
            assert {status: answer["content"] for status, answer in errors.items()} == {
                status: expected[status] for status in errors
            }, f"{method} {path}"
    error = document["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"error", "request_id"}


def test_credentials_are_described_per_operation() -> None:
    document = openapi.document()
    schemes = document["components"]["securitySchemes"]
    assert schemes["jwt"] == {**schemes["jwt"], "type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    assert schemes["mindKeyHeader"]["name"] == "X-Mind-Key"
    # A person's routes take only a JWT; memory routes either credential; the document none
    assert document["paths"]["/minds"]["post"]["security"] == [{"jwt": []}]
    either: list[dict[str, list[str]]] = [{"jwt": []}, {"mindKey": []}, {"mindKeyHeader": []}]
    assert document["paths"]["/memory/batch"]["post"]["security"] == either
    assert document["paths"]["/openapi.json"]["get"]["security"] == []


def test_recall_answers_text_or_json() -> None:
    recall = openapi.document()["paths"]["/memory/recall"]["get"]["responses"]["200"]["content"]
    assert set(recall) == {"text/plain", "application/json"}


def test_request_bodies_are_the_models_the_handlers_validate_with() -> None:
    document = openapi.document()
    store = document["paths"]["/memory"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert store == {"$ref": "#/components/schemas/MemoryWrite"}
    memory_write = document["components"]["schemas"]["MemoryWrite"]
    assert memory_write["required"] == ["content"]  # a note, its key derived, when left out
    assert memory_write["additionalProperties"] is False
    batch = document["components"]["schemas"]["MemoryBatch"]["properties"]["memories"]
    assert (batch["minItems"], batch["maxItems"]) == (1, 100)


def test_the_document_is_served_without_a_credential(api: Api) -> None:
    # When anyone asks for it, with no credential
    answer = api.call("GET", "/openapi.json")
    # Then it is the committed document, as JSON
    assert answer.status == 200, answer.text
    assert answer.headers["Content-Type"].startswith("application/json")
    assert answer.json() == json.loads(COMMITTED.read_text())


def test_the_answer_headers_it_documents_are_sent(api: Api) -> None:
    paths = openapi.document()["paths"]
    # Given the document's word on what a creation, a rate limit and a batch answer carry
    assert paths["/memory"]["post"]["responses"]["201"]["headers"]["Location"]["required"] is True
    assert paths["/memory"]["post"]["responses"]["429"]["headers"]["Retry-After"]["required"] is True
    assert "Idempotent-Replayed" in paths["/memory/batch"]["post"]["responses"]["200"]["headers"]
    # When a memory is created, and a batch sent twice with one Idempotency-Key
    mind = api.create_mind()
    created = api.store(mind)
    batch = {"memories": [{"category": "fact", "key": "batched", "content": "Sent twice"}]}
    first, replay = (
        api.call("POST", "/memory/batch", token=mind.key, json_body=batch, headers={"Idempotency-Key": "k1"})
        for _ in range(2)
    )
    # Then the answers carry those headers
    assert created.status == 201 and created.headers["Location"] == f"/memory/{created.json()['id']}"
    assert first.status == replay.status == 200
    assert "Idempotent-Replayed" not in first.headers and replay.headers["Idempotent-Replayed"] == "true"
