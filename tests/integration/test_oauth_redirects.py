"""OAuth redirects go only where a client registered (issue 32, item 3): registration refuses redirect
URIs a browser could read differently (RFC 6749 §3.1.2, RFC 7591 invalid_redirect_uri); a requested
URI passes registration's own checks before the loopback rule (RFC 8252 §7.3) lets its port vary;
the Location is rebuilt from the checked parts; an erroneous request from a self-registered client is
shown to the signed-in person instead of redirected (RFC 9700 §4.11.2); and RFC 7009 revocation
ends only the requesting client's own tokens. None answers 500."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from synapse.oauth import clients
from synapse.storage import tables

from tests.support.api import Api, MindHandle
from tests.support.clock import ticking_clock_fixture as ticking_clock_fixture
from tests.support.oauth import FORM, Flow, mcp, query_of

LOOPBACK = "http://127.0.0.1/callback"


@pytest.fixture
def mind(api: Api, ticking_clock: None) -> MindHandle:
    return api.create_mind("alice")


def register(api: Api, *uris: str) -> Any:
    return api.call("POST", "/oauth/register", json_body={"client_name": "App", "redirect_uris": list(uris)})


def revoke(api: Api, token: str, client_id: str | None) -> Any:
    fields = {"token": token, **({"client_id": client_id} if client_id else {})}
    return api.call("POST", "/oauth/revoke", raw_body=urlencode(fields).encode(), headers=FORM)


# ------------------------------------------------------------------ registration


@pytest.mark.parametrize(
    ("uri", "rule"),
    [
        ("http://127.0.0.1/cb\r\nSet-Cookie: a=b", "control character"),
        ("https://ok.example/cb\nx", "control character"),
        ("https://ok.example/c\tb", "control character"),
        ("https://ok.example/cb\x00", "control character"),
        ("https://ok.example/cb\x7f", "control character"),
        (" https://ok.example/cb", "space"),
        ("https://ok.example/cb ", "space"),
        ("https://ok.example/a b", "space"),
        ("https://ok.example/a\\b", "backslash"),
        ("http://127.0.0.2:9999\\@127.0.0.1/callback", "backslash"),
        ("https://user@ok.example/cb", "credentials"),
        ("https://ok.example/cb#frag", "fragment"),
    ],
)
def test_registration_refuses_a_redirect_uri_a_browser_could_read_otherwise(
    api: Api, uri: str, rule: str
) -> None:
    # When a client registers a redirect URI with a control character, a space, a backslash,
    # credentials or a fragment
    answer = register(api, "https://ok.example/fine", uri)
    # Then it is refused as invalid_redirect_uri, naming the field and the rule
    assert answer.status == 400, answer.text
    body = answer.json()
    assert body["error"] == "invalid_redirect_uri"
    assert "redirect_uris" in body["error_description"] and rule in body["error_description"]


# ------------------------------------------------------------------ the requested redirect URI


@pytest.mark.parametrize(
    "asked",
    [
        "http://127.0.0.2:9999\\@127.0.0.1/callback",  # a browser goes to 127.0.0.2:9999
        "http://127.0.0.2:9999\\@127.0.0.1:80/callback",
        "http://evil@127.0.0.1:5000/callback",
        "http://127.0.0.1:5000/call\tback",  # urlsplit drops TAB, CR and LF: "/callback"
        "http://127.0.0.1:5000/callback\r\nSet-Cookie: a=b",
        "http://127.0.0.1:5000/callback\x00",
        " http://127.0.0.1:5000/callback",  # urlsplit strips leading spaces
        "http://127.0.0.1:5000/callback#x",
        "http://127.0.0.1:5000/callback/",
        "http://127.0.0.1:5000/callback?x=1",
        "http://localhost:5000/callback",
        "https://127.0.0.1:5000/callback",
        "http://127.0.0.1:/callback",
    ],
)
def test_a_requested_loopback_uri_passes_registrations_checks_before_its_port_may_vary(
    api: Api, asked: str
) -> None:
    # Given a client registered with a loopback redirect URI
    flow = Flow(api, LOOPBACK)
    # When it asks for a URI that only a lenient parser reads as that loopback URI on another port
    answer = flow.authorize(redirect_uri=asked)
    # Then the request is answered here, never redirected
    assert answer.status == 400, answer.text
    assert "Location" not in answer.headers and answer.json()["error"] == "invalid_request"
    assert "redirect_uri" in answer.json()["error_description"]


def test_the_code_goes_to_a_location_rebuilt_from_the_checked_parts(api: Api, mind: MindHandle) -> None:
    # Given a loopback registration with a query, asked on another port
    flow = Flow(api, "http://127.0.0.1/callback?app=1")
    flow.redirect_uri = "http://127.0.0.1:4567/callback?app=1"
    # When the person approves
    answer = flow.decide(mind, flow.request_id())
    # Then the code goes to that URI, its query kept, ours added
    sent = answer.json()["redirect_to"]
    assert sent.startswith("http://127.0.0.1:4567/callback?app=1&code=oac_"), sent
    assert query_of(sent)["state"] == "s-123"


def test_a_location_is_ascii_whatever_the_registered_path(api: Api, mind: MindHandle) -> None:
    # Given an https redirect URI with a non-ASCII path (a header carries ASCII)
    flow = Flow(api, "https://app.example/cb/\u00e9\u20ac")
    # When the person approves
    sent = flow.decide(mind, flow.request_id()).json()["redirect_to"]
    # Then the Location is the URI percent-encoded, as a browser would send it
    assert sent.startswith("https://app.example/cb/%C3%A9%E2%82%AC?code=oac_"), sent
    assert sent.isascii()
    # And the code is exchanged with the URI as the client registered and sent it
    code = query_of(sent)["code"]
    assert flow.exchange(code).status == 200


def store_client(uris: list[Any], letter: str = "a") -> str:
    """A registration stored before registration refused such URIs (or edited by hand)."""
    client_id = "oc_" + letter * 26
    item = {**clients.client_key(client_id), "id": client_id, "name": "Old", "redirect_uris": uris}
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))
    return client_id


def test_a_stored_redirect_uri_registration_now_refuses_is_unusable_not_a_500(api: Api) -> None:
    # Given a client stored with a CR/LF redirect URI (and a valid one)
    bad = "http://127.0.0.1:9/cb\r\nSet-Cookie: a=b"
    client_id = store_client([bad, "https://ok.example/cb"])
    flow = Flow(api)
    flow.client_id = client_id
    # When it asks for the bad one, or names none while only the bad one is stored
    asked = flow.authorize(redirect_uri=bad)
    only_bad = store_client([bad, 7], "b")
    flow.client_id = only_bad
    unnamed = flow.authorize(redirect_uri=None, response_type="token")
    # Then neither is redirected (and nothing answers 500)
    for answer in (asked, unnamed):
        assert answer.status == 400 and "Location" not in answer.headers, answer.text
    # And the valid one still works
    flow.client_id = client_id
    assert flow.authorize(redirect_uri="https://ok.example/cb").status == 302


# ------------------------------------------------------------------ error redirects (RFC 9700 §4.11.2)


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
    ],
)
def test_an_erroneous_request_is_not_redirected_before_the_person_signs_in_and_decides(
    api: Api, mind: MindHandle, overrides: dict[str, Any], error: str
) -> None:
    # Given a self-registered client whose https redirect URI is its own site
    flow = Flow(api, "https://phish.example/cb")
    # When it sends an erroneous authorization request
    answer = flow.authorize(**overrides)
    # Then the browser goes to the consent page, not to the client's site
    assert answer.status == 302
    location = answer.headers["Location"]
    assert location.startswith("http://127.0.0.1/console#/connect/oar_"), location
    request_id = location.rsplit("/", 1)[1]
    # And the signed-in person is shown the error and where going back would lead
    shown = api.call("GET", f"/oauth/requests/{request_id}", token=mind.jwt)
    assert shown.status == 200, shown.text
    assert shown.json()["error"]["error"] == error
    assert shown.json()["client"]["redirect_host"] == "phish.example"
    # And such a request cannot be approved
    approved = flow.decide(mind, request_id)
    assert approved.status == 409, approved.text
    # And only when the person chooses to go back does the client get its error, with its state
    back = flow.decide(mind, request_id, approve=False).json()["redirect_to"]
    assert back.startswith("https://phish.example/cb?")
    assert query_of(back)["error"] == error and query_of(back)["state"] == "s-123"


def test_an_overlong_state_is_not_sent_back(api: Api, mind: MindHandle) -> None:
    flow = Flow(api)
    answer = flow.authorize(state="s" * 1025)
    request_id = answer.headers["Location"].rsplit("/", 1)[1]
    back = flow.decide(mind, request_id, approve=False).json()["redirect_to"]
    assert query_of(back)["error"] == "invalid_request" and "state" not in query_of(back)


# ------------------------------------------------------------------ revocation (RFC 7009 §2.1)


def test_a_client_cannot_revoke_another_clients_token(api: Api, mind: MindHandle) -> None:
    # Given two apps, each with a grant
    victim, other = Flow(api), Flow(api)
    tokens = victim.tokens(mind)
    other.tokens(mind)
    for token in (tokens["refresh_token"], tokens["access_token"]):
        # When the other app asks to revoke the victim's token
        answer = revoke(api, token, other.client_id)
        # Then it is refused (RFC 7009 §2.1: the token was not issued to it) and nothing is revoked
        assert answer.status == 400 and answer.json()["error"] == "invalid_grant", answer.text
        assert "another client" in answer.json()["error_description"]
    assert mcp(api, tokens["access_token"]).status == 200


def test_revocation_needs_the_client_to_say_who_it_is(api: Api, mind: MindHandle) -> None:
    flow = Flow(api)
    tokens = flow.tokens(mind)
    missing = revoke(api, tokens["refresh_token"], None)
    unknown = revoke(api, tokens["refresh_token"], "oc_" + "z" * 26)
    assert missing.status == 400 and missing.json()["error"] == "invalid_request"
    assert "client_id" in missing.json()["error_description"]
    assert unknown.status == 401 and unknown.json()["error"] == "invalid_client"
    assert mcp(api, tokens["access_token"]).status == 200


def test_a_client_revokes_its_own_access_token_and_an_unknown_token_is_fine(
    api: Api, mind: MindHandle
) -> None:
    flow = Flow(api)
    tokens = flow.tokens(mind)
    assert revoke(api, "oat_nothing-we-issued", flow.client_id).status == 200
    assert revoke(api, tokens["access_token"], flow.client_id).status == 200
    assert mcp(api, tokens["access_token"]).status == 401
    assert revoke(api, tokens["access_token"], flow.client_id).status == 200  # already gone: fine
