"""The OpenAPI document says exactly what the API accepts (issue 21): for the inputs where the two
parted, the document's schema (validated as JSON Schema 2020-12) and the API's answer agree on each
value. The contract fuzz (tests/e2e/test_contract.py, `positive_data_acceptance`) holds every
operation to the same; these pin the cases down one by one."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema_rs import Draft202012Validator
from synapse.openapi import document as openapi
from synapse.webhooks import bodies, ssrf

from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_user
from tests.support.oauth import Flow

DOCUMENT = json.loads(openapi.render())


def _body_schema(name: str) -> Draft202012Validator:
    root = {"components": DOCUMENT["components"], "$ref": f"#/components/schemas/{name}"}
    return Draft202012Validator(root)


def _parameter(method: str, path: str, name: str) -> re.Pattern[str]:
    found = [p for p in DOCUMENT["paths"][path][method]["parameters"] if p["name"] == name]
    assert len(found) == 1, (method, path, name)
    return re.compile(found[0]["schema"]["pattern"])


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind("documented")


# ---------------------------------------------------------------- bodies


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({}, False),
        ({"name": None, "agent_writes_to_verified": None, "history_retention_days": None}, False),
        ({"name": None}, False),
        ({"name": "Renamed"}, True),
        ({"history_retention_days": 30, "name": None}, True),
        ({"agent_writes_to_verified": "unverify"}, True),
    ],
)
def test_a_mind_update_that_changes_nothing_is_refused_by_both(
    api: Api, mind: MindHandle, body: dict[str, Any], valid: bool
) -> None:
    # The document: at least one field, and not null
    assert _body_schema("MindPatch").is_valid(body) is valid
    # The API: the same, a 422 otherwise
    answer = api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body=body)
    assert answer.status == (200 if valid else 422), answer.text
    assert DOCUMENT["paths"]["/minds/{mind_id}"]["patch"]["requestBody"]["required"] is True


def test_a_whole_number_written_with_a_point_zero_is_that_number(api: Api, mind: MindHandle) -> None:
    # JSON Schema's integer is any number without a fraction, 60.0 too; so is the API's
    assert _body_schema("HookRotate").is_valid({"grace_seconds": 60.0})
    hook = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}).json()["id"]
    rotated = api.call(
        "POST", f"/minds/{mind.id}/hooks/{hook}/rotate", token=mind.jwt, json_body={"grace_seconds": 60.0}
    )
    assert rotated.status == 200, rotated.text
    patched = api.call(
        "PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"history_retention_days": 30.0}
    )
    assert patched.status == 200, patched.text
    kept = patched.json()["settings"]["history_retention_days"]
    assert kept == 30 and isinstance(kept, int)  # stored and answered as the whole number
    # And a fraction is refused by both
    assert not _body_schema("HookRotate").is_valid({"grace_seconds": 60.5})
    half = api.call(
        "POST", f"/minds/{mind.id}/hooks/{hook}/rotate", token=mind.jwt, json_body={"grace_seconds": 60.5}
    )
    assert half.status == 422, half.text


TAGS = ["docker", " Docker ", "two words", "\tedge\n", "x" * 64, " " + "x" * 64 + " ", "é" * 64]
TAGS += ["x" * 65, "a\x00b", "bell\x07", "del\x7f", "  ", "\x1c", ""]


@pytest.mark.parametrize("tag", TAGS)
def test_a_tag_the_document_allows_is_stored_and_one_it_does_not_is_refused(
    api: Api, mind: MindHandle, tag: str
) -> None:
    valid = _body_schema("MemoryWrite").is_valid({**memory_body(), "tags": [tag]})
    answer = api.store(mind, **memory_body(tags=[tag]))
    assert answer.status == (201 if valid else 422), (repr(tag), answer.text)


def test_more_tags_than_the_document_allows_are_refused(api: Api, mind: MindHandle) -> None:
    many = [f"t{i}" for i in range(21)]
    assert not _body_schema("MemoryWrite").is_valid({**memory_body(), "tags": many})
    assert api.store(mind, **memory_body(tags=many)).status == 422
    assert _body_schema("MemoryWrite").is_valid({**memory_body(), "tags": many[:20]})


URLS = ["https://example.com", "https://hooks.example.com:8443/in?x=1", "https://localhost:9/events"]
URLS += ["", "http://example.com", "https://", "https://a b.com", "https://a.com:0", "https://a.com:65536"]
URLS += ["https://user@a.com/", "https://a.com/\x00", "ftp://a.com"]


@pytest.mark.parametrize("url", URLS)
def test_a_webhook_url_of_the_documented_shape_passes_the_shape_rule(url: str) -> None:
    # Whether the host resolves, and to public addresses, is known only when it is checked (a 422
    # naming the address); the shape is what the document states, and the same as the rule's
    shaped = re.search(bodies.URL_PATTERN, url) is not None
    try:
        ssrf.parse(url)
        parsed = True
    except ssrf.Refused:
        parsed = False
    assert shaped == parsed, url


# ---------------------------------------------------------------- headers and query parameters


IF_MATCH = ["1", '"1"', 'W/"1"', "W/1", "999999999", '""1', '1"', '"1', "*", "1.0", "W/", "latest"]


@pytest.mark.parametrize("value", IF_MATCH)
def test_if_match_is_what_the_document_says(api: Api, mind: MindHandle, value: str) -> None:
    pattern = _parameter("put", "/memory/{id}", "If-Match")
    memory = api.store(mind).json()["id"]
    answer = api.call(
        "PUT",
        f"/memory/{memory}",
        json_body={"content": "changed"},
        token=mind.jwt,
        headers={"X-Mind-Id": mind.id, "If-Match": value},
    )
    # A version the pattern allows is applied (or is stale: 412); anything else is a 400
    assert (answer.status in (200, 412)) is bool(pattern.search(value)), (value, answer.text)


IDEMPOTENCY_KEYS = ["k", "batch-2026-01-01#1", "~!" * 10, "a" * 255, "a" * 256, "with space", "é"]


@pytest.mark.parametrize("value", IDEMPOTENCY_KEYS)
def test_an_idempotency_key_is_what_the_document_says(api: Api, mind: MindHandle, value: str) -> None:
    pattern = _parameter("post", "/memory/batch", "Idempotency-Key")
    answer = api.call(
        "POST",
        "/memory/batch",
        json_body={"memories": [memory_body()]},
        headers={"X-Mind-Id": mind.id, "Idempotency-Key": value},
        token=mind.jwt,
    )
    assert (answer.status == 200) is bool(pattern.search(value)), (value, answer.text)


WITHIN = ["1m", "30m", "525600m", "525601m", "24h", "8760h", "8761h", "7d", "365d", "366d", "52w", "53w"]
WITHIN += ["0d", "07d", "1y", "d", "9999999d", "1.5d"]


@pytest.mark.parametrize("value", WITHIN)
def test_within_is_what_the_document_says(api: Api, mind: MindHandle, value: str) -> None:
    pattern = _parameter("get", "/memory/expiring", "within")
    answer = api.call("GET", "/memory/expiring", query={"within": value}, **as_user(mind))
    assert (answer.status == 200) is bool(pattern.search(value)), (value, answer.text)


def test_a_cursor_is_what_the_document_says(api: Api, mind: MindHandle) -> None:
    pattern = _parameter("get", "/memory", "cursor")
    for key in ("first", "second"):
        assert api.store(mind, **memory_body(key=key)).status == 201
    issued = api.call("GET", "/memory", query={"limit": 1}, **as_user(mind)).json()["next_cursor"]
    assert pattern.search(issued)
    # A character outside base64url, which decoding would have skipped, is outside both
    altered = issued[:4] + "!" + issued[4:]
    assert not pattern.search(altered)
    assert api.call("GET", "/memory", query={"cursor": altered}, **as_user(mind)).status == 400


@pytest.mark.parametrize(
    ("q", "valid"), [("docker", True), ("Köln", True), ("7", True), ("\U00015e9f", False)]
)
def test_a_search_needs_a_letter_or_digit_as_the_document_says(
    api: Api, mind: MindHandle, q: str, valid: bool
) -> None:
    pattern = _parameter("get", "/memory/search", "q")
    assert bool(pattern.search(q)) is valid
    assert (api.call("GET", "/memory/search", query={"q": q}, **as_user(mind)).status == 200) is valid


# ---------------------------------------------------------------- OAuth


REDIRECT_URIS = ["https://claude.ai/api/mcp/auth_callback", "https://a.example:8443/cb?x=1", "https://a.b"]
REDIRECT_URIS += ["http://127.0.0.1:9/callback", "http://localhost/cb", "http://[::1]:33418/", "https://x?y"]
REDIRECT_URIS += ["http://example.com/cb", "https://a.example/cb#frag", "https://user@a.example/", "ftp://a"]
REDIRECT_URIS += ["https://a.example:65536/", "https://", "http://127.0.0.2/", "javascript:alert(1)", ""]


@pytest.mark.parametrize("uri", REDIRECT_URIS)
def test_a_redirect_uri_the_document_allows_is_registered_and_one_it_does_not_is_refused(
    api: Api, uri: str
) -> None:
    valid = _body_schema("ClientMetadata").is_valid({"redirect_uris": [uri]})
    answer = api.call("POST", "/oauth/register", json_body={"redirect_uris": [uri]})
    assert answer.status == (201 if valid else 400), (uri, answer.text)


@pytest.mark.parametrize(
    ("fields", "valid"),
    [
        ({"client_name": "Claude"}, True),
        ({"client_name": "x" * 100, "grant_types": ["refresh_token"], "response_types": ["code"]}, True),
        ({"token_endpoint_auth_method": "client_secret_basic"}, True),  # answered as none
        ({"client_name": "x" * 101}, False),
        ({"client_name": "   "}, False),
        ({"client_name": None}, False),
        ({"grant_types": ["client_credentials"]}, False),
        ({"response_types": ["token"]}, False),
        ({"grant_types": None}, False),
    ],
)
def test_client_metadata_is_what_the_document_says(api: Api, fields: dict[str, Any], valid: bool) -> None:
    body = {"redirect_uris": ["https://a.example/cb"], **fields}
    assert _body_schema("ClientMetadata").is_valid(body) is valid
    answer = api.call("POST", "/oauth/register", json_body=body)
    assert answer.status == (201 if valid else 400), (fields, answer.text)


VERIFIERS = ["a" * 43, "A-._~9" * 20 + "abcdefgh", "a" * 128, "a" * 42, "a" * 129, "a" * 42 + "+", "é" * 43]


@pytest.mark.parametrize("verifier", VERIFIERS)
def test_a_code_verifier_the_document_allows_is_checked_against_the_challenge(
    api: Api, mind: MindHandle, verifier: str
) -> None:
    # Given a code whose challenge no verifier here matches
    flow = Flow(api)
    form = {"grant_type": "authorization_code", "client_id": flow.client_id, "code_verifier": verifier}
    valid = _body_schema("TokenRequest").is_valid({**form, "code": "oac_x"})
    answer = flow.exchange(flow.code(mind), code_verifier=verifier)
    # Then one of the documented shape reaches the comparison; another is refused for its shape
    described = answer.json()["error_description"]
    assert answer.status == 400 and ("does not match" in described) is valid, (verifier, described)


MIND = "<the person's mind>"


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"approve": False}, True),
        ({"approve": True, "mind_id": MIND, "scopes": ["delete", "read"]}, True),
        ({"approve": True, "scopes": ["read"]}, False),
        ({"approve": True, "mind_id": MIND, "scopes": []}, False),
        ({"approve": True, "mind_id": MIND, "scopes": ["read", "admin"]}, False),
        ({"approve": True, "mind_id": MIND}, False),
        ({"approve": "yes"}, False),
        ({}, False),
    ],
)
def test_a_consent_decision_is_what_the_document_says(
    api: Api, mind: MindHandle, body: dict[str, Any], valid: bool
) -> None:
    body = {name: mind.id if value == MIND else value for name, value in body.items()}
    assert _body_schema("ConsentDecision").is_valid(body) is valid
    answer = api.call("POST", f"/oauth/requests/{Flow(api).request_id()}", token=mind.jwt, json_body=body)
    assert answer.status == (200 if valid else 422), (body, answer.text)


def _required_headers(method: str, path: str, status: int) -> dict[str, Any]:
    documented = DOCUMENT["paths"][path][method]["responses"][str(status)].get("headers", {})
    return {name: header["schema"] for name, header in documented.items() if header["required"]}


def test_the_oauth_answers_carry_the_headers_the_document_states(api: Api, mind: MindHandle) -> None:
    # Given a client through the flow: registered, redirected, tokens issued, then revoked
    flow = Flow(api)
    registered = api.call("POST", "/oauth/register", json_body={"redirect_uris": ["https://a.example/cb"]})
    redirected = flow.authorize()
    issued = flow.exchange(flow.code(mind))
    revoked = api.call(
        "POST",
        "/oauth/revoke",
        raw_body=f"token={issued.json()['refresh_token']}&client_id={flow.client_id}".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    answers = {
        ("post", "/oauth/register", 201): registered,
        ("get", "/oauth/authorize", 302): redirected,
        ("post", "/oauth/token", 200): issued,
        ("post", "/oauth/revoke", 200): revoked,
    }
    # Then each carries every header the document says it must, with the stated value
    for (method, path, status), answer in answers.items():
        assert answer.status == status, (path, answer.text)
        required = _required_headers(method, path, status)
        assert {"Cache-Control", "Pragma"} <= set(required), path
        for name, schema in required.items():
            assert name in answer.headers, (path, name)
            assert "const" not in schema or answer.headers[name] == schema["const"], (path, name)
