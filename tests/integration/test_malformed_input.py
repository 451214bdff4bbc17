"""No 500 from malformed input at the OAuth endpoints, the consent endpoints or restore (issue 40
item 3): JSON with lone surrogates, values of every type, bodies that are not JSON objects or not
UTF-8, HTTP Basic credentials that are not base64 of UTF-8 text, restore lines whose `kind` or any
field is of another type. The named cases first, then every probe of tests/support/malformed.py."""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import Any

import pytest

from tests.support import backups, malformed
from tests.support.api import Api, MindHandle
from tests.support.oauth import FORM, Flow

SURROGATE_CODE = b'{"grant_type": "authorization_code", "code": "\\ud800", "client_id": "oc_x"}'


@pytest.fixture
def flow(api: Api) -> Flow:
    return Flow(api)


def _oauth_error(answer: Any, status: int, error: str) -> dict[str, Any]:
    assert answer.status == status, answer.text
    body: dict[str, Any] = answer.json()
    assert body["error"] == error, body
    return body


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
def test_a_json_body_with_a_lone_surrogate_is_invalid_request(api: Api, path: str) -> None:
    # Given a JSON body whose code is a lone surrogate, written as JSON's escape
    # When it is sent to the token or revocation endpoint (it was a 500, UnicodeEncodeError)
    answer = api.call("POST", path, raw_body=SURROGATE_CODE, headers=malformed.JSON)
    # Then it is OAuth's invalid_request, naming where
    body = _oauth_error(answer, 400, "invalid_request")
    assert "(code)" in body["error_description"]


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke"])
@pytest.mark.parametrize(
    "credentials",
    [
        "Basic é",
        "Basic \xff\xfe",
        "Basic !!!",
        "Basic " + base64.b64encode(b"\xff\xfe:secret").decode(),
        "Basic " + base64.b64encode(b"c" * 10_000 + b":").decode(),
    ],
    ids=["non-ASCII", "latin-1", "not base64", "not UTF-8 once decoded", "an id too long"],
)
def test_basic_credentials_that_are_not_base64_of_text_are_invalid_client_with_a_challenge(
    api: Api, flow: Flow, path: str, credentials: str
) -> None:
    # Given a client that sends HTTP Basic credentials that are not base64 of id:secret
    form = f"token=oat_x&grant_type=refresh_token&refresh_token=ort_x&client_id={flow.client_id}"
    # When it calls the token or revocation endpoint (`Basic é` was a 500, b64decode's ValueError)
    answer = api.call("POST", path, raw_body=form.encode(), headers={**FORM, "authorization": credentials})
    # Then it is refused as RFC 6749 §5.2 says: invalid_client, 401, a challenge for its scheme
    _oauth_error(answer, 401, "invalid_client")
    assert answer.headers["WWW-Authenticate"].startswith("Basic ")


def test_well_formed_basic_credentials_still_name_the_client(api: Api, flow: Flow) -> None:
    # Given a client sending its id by HTTP Basic, with an empty secret
    basic = base64.b64encode(f"{flow.client_id}:".encode()).decode()
    # When it revokes a token Synapse does not know
    answer = api.call(
        "POST",
        "/oauth/revoke",
        raw_body=b"token=oat_unknown",
        headers={**FORM, "authorization": f"Basic {basic}"},
    )
    # Then it is answered as a known client is (RFC 7009 §2.2: 200)
    assert answer.status == 200, answer.text


@pytest.mark.parametrize("body", [b'{"code": 7}', b'{"code": ["a"]}', b'{"code": {"a": 1}}', b"[]", b"NaN"])
def test_a_json_body_that_is_not_an_object_of_text_is_invalid_request(api: Api, body: bytes) -> None:
    answer = api.call("POST", "/oauth/token", raw_body=body, headers=malformed.JSON)
    _oauth_error(answer, 400, "invalid_request")


def _counts(api: Api, probes: list[malformed.Probe]) -> tuple[Counter[int], list[str]]:
    statuses: Counter[int] = Counter()
    failing: list[str] = []
    for probe in probes:
        status = malformed.send(api, probe)
        statuses[status] += 1
        if status >= 500:
            failing.append(f"{probe.name}: {status}")
    return statuses, failing


def test_no_probe_of_the_oauth_endpoints_is_answered_with_a_5xx(api: Api, flow: Flow) -> None:
    # Given every malformed probe of the token, revocation, registration and authorization endpoints
    probes = list(malformed.oauth(flow.client_id))
    # When each is sent
    statuses, failing = _counts(api, probes)
    # Then none is answered with a 5xx
    assert len(probes) > 500 and failing == [], (len(probes), failing[:20])
    assert sum(statuses.values()) == len(probes)


def test_no_probe_of_the_consent_endpoints_is_answered_with_a_5xx(api: Api, flow: Flow) -> None:
    mind = api.create_mind("consent-owner")
    probes = list(malformed.consent(mind, flow.request_id()))
    _, failing = _counts(api, probes)
    assert len(probes) > 50 and failing == [], failing[:20]


def test_no_probe_of_restore_is_answered_with_a_5xx(api: Api) -> None:
    # Given a real backup (a memory with a revision and a pending proposal), and an empty mind
    source = api.create_mind("restore-source")
    assert api.store(source, key="home_city", content="Lives in Berlin").status == 201
    assert api.store(source, as_agent=True, key="home_city", content="Lives in Oslo").status == 202
    records = [json.loads(line) for line in backups.backup(api, source).splitlines()]
    target: MindHandle = api.create_mind("restore-target")
    # When every malformed restore probe is sent
    probes = list(malformed.restore(target, records))
    _, failing = _counts(api, probes)
    # Then none is answered with a 5xx
    assert len(probes) > 500 and failing == [], failing[:20]


def test_an_integer_no_float_holds_is_a_422_at_rest_not_a_500(api: Api) -> None:
    # Given a memory whose confidence is 1 followed by 400 zeros (JSON integers have no bound)
    mind = api.create_mind("writer")
    body = ('{"category": "note", "key": "k", "content": "c", "confidence": 1' + "0" * 400 + "}").encode()
    # When it is written (found by restore's fuzz: the message formatting it raised OverflowError)
    answer = api.call(
        "POST", "/memory", raw_body=body, headers={**malformed.JSON, "X-Mind-Id": mind.id}, token=mind.jwt
    )
    # Then it is refused naming the field and the rule
    assert answer.status == 422, answer.text
    assert answer.json()["error"]["details"][0] == {
        "field": "confidence",
        "rule": "range",
        "message": "must be between 0 and 1 (got a number past 1e308)",
    }
