"""Security through the API: minds are sealed from each other, credentials are what they claim,
and Mind Keys are never stored or logged in plain text."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import jwt
import pytest

from infra import template
from tests.support.api import TEST_JWT_SECRET, Api, MindHandle, jwt_for, memory_body
from tests.support.checks import as_agent, as_user, assert_error
from tests.support.jwks import Jwks
from tests.support.jwks import jwks_fixture as jwks_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.tables import MEMORIES, MINDS, scan


@pytest.fixture
def mine(api: Api) -> MindHandle:
    return api.create_mind("user-1", "Mine")


@pytest.fixture
def theirs(api: Api) -> MindHandle:
    return api.create_mind("user-2", "Theirs")


# ---------------------------------------------------------------- minds are sealed


def memory_routes(memory_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", f"/memory/{memory_id}", None),
        ("PUT", f"/memory/{memory_id}", {"content": "overwritten"}),
        ("DELETE", f"/memory/{memory_id}", None),
        ("POST", f"/memory/{memory_id}/verify", None),
    ]


def test_another_minds_memory_id_is_a_404_like_one_that_never_existed(
    api: Api, mine: MindHandle, theirs: MindHandle
) -> None:
    # Given a memory in their mind
    their_memory = api.store(theirs, content="Their secret").json()
    # When I address it by id from my own mind, with my JWT or my mind's key
    for by_key, credentials in ((False, as_user(mine)), (True, as_agent(mine))):
        for method, path, body in memory_routes(their_memory["id"]):
            answer = api.call(method, path, json_body=body, **credentials)
            if by_key and path.endswith("/verify"):
                assert_error(answer, 403)  # verify is refused to any Mind Key before anything else
                continue
            # Then it answers exactly as an id that never existed
            error = assert_error(answer, 404)
            never = api.call(
                method, path.replace(their_memory["id"], "mem_neverexisted"), json_body=body, **credentials
            )
            assert assert_error(never, 404)["code"] == error["code"]
            assert "Their secret" not in answer.text
    # And their memory is untouched
    still = api.call("GET", f"/memory/{their_memory['id']}", **as_agent(theirs)).json()
    assert (still["content"], still["version"], still["verified"]) == ("Their secret", 1, True)


def test_x_mind_id_of_someone_elses_mind_is_a_404(api: Api, mine: MindHandle, theirs: MindHandle) -> None:
    api.store(theirs)
    for method, path, body in [("GET", "/memory", None), ("POST", "/memory", memory_body())]:
        # With my JWT and their mind id, by header or by query parameter
        by_header = api.call(method, path, token=mine.jwt, json_body=body, headers={"X-Mind-Id": theirs.id})
        by_query = api.call(method, path, token=mine.jwt, json_body=body, query={"mind_id": theirs.id})
        # And with my mind's key naming their mind
        by_key = api.call(method, path, token=mine.key, json_body=body, headers={"X-Mind-Id": theirs.id})
        for answer in (by_header, by_query, by_key):
            assert_error(answer, 404)
    # And nothing was written into their mind
    assert len(api.call("GET", "/memory", **as_agent(theirs)).json()["memories"]) == 1


def test_a_mind_key_names_its_own_mind_only(api: Api, mine: MindHandle) -> None:
    # Naming its own mind is allowed, and naming none means its own
    assert api.call("GET", "/memory", token=mine.key, headers={"X-Mind-Id": mine.id}).status == 200
    assert api.store(mine, as_agent=True).status == 201


# ---------------------------------------------------------------- what a Mind Key may not do


def test_a_mind_key_may_not_verify(api: Api, mine: MindHandle) -> None:
    memory = api.store(mine, as_agent=True).json()
    assert (
        "verify"
        in assert_error(api.call("POST", f"/memory/{memory['id']}/verify", **as_agent(mine)), 403)["message"]
    )
    assert api.call("GET", f"/memory/{memory['id']}", **as_agent(mine)).json()["verified"] is False


def test_a_mind_key_gets_403_on_every_minds_route(api: Api, mine: MindHandle) -> None:
    routes = [
        ("POST", "/minds", {"name": "Agent's own mind"}),
        ("GET", "/minds", None),
        ("GET", f"/minds/{mine.id}", None),
        ("PATCH", f"/minds/{mine.id}", {"name": "Renamed by agent"}),
        ("DELETE", f"/minds/{mine.id}", None),
        ("POST", f"/minds/{mine.id}/keys", {"label": "agent-made"}),
        ("GET", f"/minds/{mine.id}/keys", None),
        ("DELETE", f"/minds/{mine.id}/keys/{mine.key_id}", None),
    ]
    for method, path, body in routes:
        for headers in ({"Authorization": f"Bearer {mine.key}"}, {"X-Mind-Key": mine.key}):
            assert_error(api.call(method, path, json_body=body, headers=headers), 403)
    # And the mind, its name and its key are as they were
    mind = api.call("GET", f"/minds/{mine.id}", token=mine.jwt).json()
    assert mind["name"] == "Mine"
    assert [k["id"] for k in api.call("GET", f"/minds/{mine.id}/keys", token=mine.jwt).json()["keys"]] == [
        mine.key_id
    ]


# ---------------------------------------------------------------- revoked keys and bad JWTs


def test_a_revoked_key_is_a_401(api: Api, mine: MindHandle) -> None:
    # Given a second key, and the first one revoked
    second = api.call("POST", f"/minds/{mine.id}/keys", token=mine.jwt, json_body={"label": "ci"}).json()
    assert api.call("DELETE", f"/minds/{mine.id}/keys/{mine.key_id}", token=mine.jwt).status == 204
    # When the revoked key is used, either way it can travel
    for headers in ({"Authorization": f"Bearer {mine.key}"}, {"X-Mind-Key": mine.key}):
        answer = api.call("GET", "/memory", headers=headers)
        # Then it is a 401 with WWW-Authenticate
        assert "revoked" in assert_error(answer, 401)["message"]
    # And the other key still works, and revoking again is a 404
    assert api.call("GET", "/memory", token=second["key"]).status == 200
    assert_error(api.call("DELETE", f"/minds/{mine.id}/keys/{mine.key_id}", token=mine.jwt), 404)


def test_a_revoke_cut_short_never_leaves_a_working_key_nobody_can_see(
    api: Api, mine: MindHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a revoke whose invocation dies after DynamoDB took only part of its deletes
    from synapse.storage import tables

    whole = tables.batch_delete

    def cut_short(table: str, keys: list[dict[str, str]]) -> None:
        whole(table, keys[-1:])
        raise TimeoutError("Task timed out")

    monkeypatch.setattr(tables, "batch_delete", cut_short)
    api.call("DELETE", f"/minds/{mine.id}/keys/{mine.key_id}", token=mine.jwt)
    monkeypatch.undo()
    # When the key is used, and the keys are listed
    works = api.call("GET", "/memory", token=mine.key).status == 200
    keys = api.call("GET", f"/minds/{mine.id}/keys", token=mine.jwt).json()["keys"]
    # Then the key is revoked whole or not at all: one that still works is listed, and revocable
    assert works == (mine.key_id in [k["id"] for k in keys])
    if works:
        assert api.call("DELETE", f"/minds/{mine.id}/keys/{mine.key_id}", token=mine.jwt).status == 204
    assert_error(api.call("GET", "/memory", token=mine.key), 401)


def _token(claims: dict[str, Any], key: Any = TEST_JWT_SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=algorithm)


def _bad_authorizations() -> dict[str, str]:
    now = int(time.time())
    unsigned = _token({"sub": "user-1", "exp": now + 600}, None, "none")
    return {
        "expired": f"Bearer {jwt_for('user-1', ttl=-60)}",
        "wrong signature": f"Bearer {jwt_for('user-1', secret='someone-elses-secret-0123456789abcdef')}",
        "tampered payload": "Bearer " + _swap_sub(jwt_for("user-1"), "user-2"),
        "alg none": f"Bearer {unsigned}",
        "alg none with signature": f"Bearer {unsigned}AAAA",
        "no sub": f"Bearer {_token({'exp': now + 600})}",
        "no exp": f"Bearer {_token({'sub': 'user-1'})}",
        "garbage": "Bearer garbage.garbage.garbage",
        "unknown mind key": "Bearer mk_" + "A" * 43,
        "basic": "Basic dXNlci0xOnBhc3N3b3Jk",
        "empty bearer": "Bearer ",
        "no scheme": jwt_for("user-1"),
    }


def _swap_sub(token: str, sub: str) -> str:
    header, _, signature = token.split(".")
    payload = jwt.utils.base64url_encode(json.dumps({"sub": sub, "exp": int(time.time()) + 600}).encode())
    return f"{header}.{payload.decode()}.{signature}"


@pytest.mark.parametrize("case", list(_bad_authorizations()))
def test_bad_credentials_are_a_401_with_www_authenticate(api: Api, mine: MindHandle, case: str) -> None:
    authorization = _bad_authorizations()[case]
    for method, path in (("GET", "/memory"), ("GET", "/minds"), ("POST", "/memory")):
        answer = api.call(
            method,
            path,
            json_body=memory_body() if method == "POST" else None,
            headers={"Authorization": authorization},
        )
        assert_error(answer, 401)


def test_no_credential_at_all_is_a_401(api: Api) -> None:
    assert_error(api.call("GET", "/memory"), 401)
    assert_error(api.call("POST", "/minds", json_body={"name": "x"}), 401)


@pytest.mark.parametrize("route", [r for r in template.routes() if r.authorized], ids=lambda r: r.route_key)
def test_without_a_credential_every_route_is_a_401_before_it_looks_at_the_body(
    api: Api, route: template.Route
) -> None:
    # Given a request with no credential and a body that breaks every body rule (too big, not JSON)
    path = re.sub(r"\{\w+\}", "m_someone", route.path)
    body = b"{not json" + b" " * (70 * 1024)
    # When it reaches any route behind the authorizer
    answer = api.call(route.method, path, raw_body=body, headers={"Content-Type": "text/plain"})
    # Then the answer is the 401, not a 413/415/400/422 about the body
    assert_error(answer, 401)


# ---------------------------------------------------------------- source follows the credential


def test_a_body_source_that_contradicts_the_credential_is_a_403(api: Api, mine: MindHandle) -> None:
    assert "source" in assert_error(api.store(mine, as_agent=True, source="user"), 403)["message"]
    assert_error(api.store(mine, source="agent"), 403)
    # And nothing was stored
    assert api.call("GET", "/memory", **as_user(mine)).json()["memories"] == []
    # While a body repeating the credential's source is fine
    assert api.store(mine, as_agent=True, source="agent").json()["source"] == "agent"
    assert api.store(mine, source="user").json()["source"] == "user"


def test_a_put_whose_source_contradicts_the_credential_is_a_403(api: Api, mine: MindHandle) -> None:
    memory_id = api.store(mine).json()["id"]
    answer = api.call(
        "PUT", f"/memory/{memory_id}", json_body={"content": "x", "source": "user"}, **as_agent(mine)
    )
    assert_error(answer, 403)
    answer = api.call(
        "PUT", f"/memory/{memory_id}", json_body={"content": "x", "source": "agent"}, **as_user(mine)
    )
    assert_error(answer, 403)
    assert api.call("GET", f"/memory/{memory_id}", **as_user(mine)).json()["version"] == 1


# ---------------------------------------------------------------- verification follows the text


def test_an_agent_rewriting_a_verified_memory_cannot_change_what_the_person_verified(
    api: Api, mine: MindHandle
) -> None:
    # Given a memory the user wrote (verified)
    first = api.store(mine, content="Lives in Berlin", tags=["home"]).json()
    assert first["verified"] is True
    # When an agent stores new content under the same key
    rewritten = api.store(mine, as_agent=True, content="Lives in Hamburg", tags=["home"])
    # Then it is only a proposal: the memory stays as the person verified it
    assert rewritten.status == 202, rewritten.text
    kept = api.call("GET", f"/memory/{first['id']}", **as_user(mine)).json()
    assert (kept["content"], kept["verified"], kept["source"], kept["version"]) == (
        "Lives in Berlin",
        True,
        "user",
        1,
    )


def test_an_agent_retagging_a_verified_memory_is_a_proposal_or_unverifies_it(
    api: Api, mine: MindHandle
) -> None:
    memory = api.store(mine, tags=["home"]).json()
    path = f"/memory/{memory['id']}"
    answer = api.call("PUT", path, json_body={"tags": ["work"]}, **as_agent(mine))
    assert answer.status == 202 and answer.json()["memory"]["tags"] == ["home"], answer.text
    # And in a mind that lets agents' changes through, the retag applies and unverifies it
    settings = {"agent_writes_to_verified": "unverify"}
    assert api.call("PATCH", f"/minds/{mine.id}", token=mine.jwt, json_body=settings).status == 200
    answer = api.call("PUT", path, json_body={"tags": ["work"]}, **as_agent(mine))
    assert (answer.json()["verified"], answer.json()["source"]) == (False, "agent")


def test_an_agent_restoring_the_same_text_keeps_it_verified(api: Api, mine: MindHandle) -> None:
    # Given a memory an agent wrote and a person verified
    memory = api.store(mine, as_agent=True, content="Prefers tea", tags=["drinks"]).json()
    verified = api.call("POST", f"/memory/{memory['id']}/verify", **as_user(mine)).json()
    assert verified["verified"] is True
    # When the agent stores identical content and tags again (tags differing only in case/space)
    again = api.store(mine, as_agent=True, content="Prefers tea", tags=[" Drinks"], priority="high").json()
    # Then it stays verified, with who verified it
    assert (again["verified"], again["verified_by"], again["priority"]) == (True, "user-1", "high")
    assert again["version"] == verified["version"] + 1


# ---------------------------------------------------------------- cursors


def _first_page_cursor(api: Api, mind: MindHandle, **query: Any) -> str:
    for i in range(3):
        api.store(mind, key=f"item_{i}", category="note")
    page = api.call("GET", "/memory", query={"limit": 1, **query}, **as_user(mind)).json()
    assert page["next_cursor"]
    return str(page["next_cursor"])


def test_a_forged_cursor_is_a_400(api: Api, mine: MindHandle) -> None:
    cursor = _first_page_cursor(api, mine)
    body, signature = cursor.split(".")
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    for forged in (f"{flipped}.{signature}", f"{body}.{signature[::-1]}", body, "e30.e30", "🍪"):
        assert_error(
            api.call("GET", "/memory", query={"cursor": forged}, **as_user(mine)), 400, field="cursor"
        )


def test_a_cursor_from_another_mind_is_a_400(api: Api, mine: MindHandle, theirs: MindHandle) -> None:
    their_cursor = _first_page_cursor(api, theirs)
    api.store(mine)
    assert_error(
        api.call("GET", "/memory", query={"cursor": their_cursor}, **as_user(mine)), 400, field="cursor"
    )
    # Also when the same user owns both minds
    second = api.create_mind("user-1", "Second")
    own_cursor = _first_page_cursor(api, mine)
    assert_error(
        api.call("GET", "/memory", query={"cursor": own_cursor}, **as_user(second)), 400, field="cursor"
    )


def test_a_cursor_from_another_filter_set_is_a_400(api: Api, mine: MindHandle) -> None:
    cursor = _first_page_cursor(api, mine, category="note")
    for query in (
        {"category": "fact"},
        {},
        {"category": "note", "verified": "true"},
        {"category": "note", "tag": "x"},
    ):
        assert_error(
            api.call("GET", "/memory", query={**query, "cursor": cursor}, **as_user(mine)),
            400,
            field="cursor",
        )
    # The same filters (with another limit) continue the listing
    assert (
        api.call(
            "GET", "/memory", query={"category": "note", "limit": 5, "cursor": cursor}, **as_user(mine)
        ).status
        == 200
    )


# ---------------------------------------------------------------- Mind Keys at rest and in logs


MIND_KEY = re.compile(r"mk_[A-Za-z0-9_-]{12,}")


def test_mind_keys_never_appear_in_logs(
    api: Api, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Given minds and keys created, and keys used every way (good, revoked, in both headers)
    mind = api.create_mind("user-1")
    extra = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"}).json()[
        "key"
    ]
    secrets = [mind.key, extra]
    api.store(mind, as_agent=True)
    api.call("GET", "/memory", headers={"X-Mind-Key": extra})
    api.call("GET", "/minds", token=extra)  # a 403
    api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt)
    api.call("DELETE", f"/minds/{mind.id}/keys/{mind.key_id}", token=mind.jwt)
    api.call("GET", "/memory", token=mind.key)  # a 401
    api.call(
        "POST", "/memory", token=extra, raw_body=b"{broken", headers={"Content-Type": "application/json"}
    )
    # When we read everything that was logged
    captured = capfd.readouterr()
    logs = captured.out + captured.err + caplog.text
    # Then the logs are there (so this test can fail) and hold no key
    assert '"Handled"' in logs or "Handled" in logs
    for secret in secrets:
        assert secret not in logs
        assert secret[3:] not in logs
    assert not MIND_KEY.search(logs), MIND_KEY.search(logs)


def test_no_table_item_holds_a_plain_mind_key(api: Api, dynamo: Any) -> None:
    mind = api.create_mind("user-1")
    extra = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"}).json()[
        "key"
    ]
    api.store(mind, as_agent=True)
    api.call("GET", "/memory", token=extra)  # records last_used_at
    stored = json.dumps(scan(dynamo, MINDS) + scan(dynamo, MEMORIES), default=str)
    for secret in (mind.key, extra):
        assert secret not in stored and secret[3:] not in stored
    assert not MIND_KEY.search(stored)
    # While each key is findable by its keyed hash
    from synapse.minds import keys

    assert keys.hash_mind_key(extra) in stored


# ---------------------------------------------------------------- JWT configuration end to end


def test_a_jwks_deployment_accepts_rs256_and_es256_and_refuses_hs256(
    api: Api, configure: Configure, jwks: Jwks
) -> None:
    # Given a deployment whose JWTs come from an OIDC provider's JWKS, with issuer and audience
    configure(
        SYNAPSE_JWKS_URL=jwks.url, SYNAPSE_JWT_ISSUER="https://idp.example", SYNAPSE_JWT_AUDIENCE="synapse"
    )
    rsa, ec = jwks.keys
    # When people sign in with RS256 and ES256 tokens from it
    for key in (rsa, ec):
        token = key.token(f"person-{key.kid}", iss="https://idp.example", aud="synapse")
        made = api.call("POST", "/minds", token=token, json_body={"name": key.kid})
        # Then they are served
        assert made.status == 201, made.text
        assert api.call("GET", "/minds", token=token).json()["minds"][0]["name"] == key.kid
    # And a shared-secret token, or one for another audience, is a 401
    assert_error(
        api.call("GET", "/minds", token=jwt_for("person-rsa-1", iss="https://idp.example", aud="synapse")),
        401,
    )
    assert_error(api.call("GET", "/minds", token=rsa.token(iss="https://idp.example", aud="other")), 401)


def test_another_users_key_cannot_be_revoked_through_my_own_mind(
    api: Api, mine: MindHandle, theirs: MindHandle
) -> None:
    # When I name their key id under my own mind
    answer = api.call("DELETE", f"/minds/{mine.id}/keys/{theirs.key_id}", token=mine.jwt)
    # Then it is a 404 and their key keeps working
    assert_error(answer, 404)
    assert api.call("GET", "/memory", token=theirs.key).status == 200


def test_one_users_two_minds_are_sealed_from_each_other_too(api: Api) -> None:
    # Given one person with two minds, and a memory in the first
    home = api.create_mind("user-1", "Home")
    work = api.create_mind("user-1", "Work")
    memory = api.store(home).json()
    # When it is addressed from the second mind, by its key or by the owner naming that mind
    for by_key, credentials in ((True, as_agent(work)), (False, as_user(work))):
        for method, path, body in memory_routes(memory["id"]):
            answer = api.call(method, path, json_body=body, **credentials)
            # Then it does not exist there (and verifying with a key is refused outright)
            refused_outright = by_key and path.endswith("/verify")
            assert_error(answer, 403 if refused_outright else 404)
    assert api.call("GET", f"/memory/{memory['id']}", **as_user(home)).json()["version"] == 1
