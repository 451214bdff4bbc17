"""Bad input through the API: every field rule is a 422 naming the field and the rule, broken
requests are 400/413/415, and no input at all produces a 500."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pytest
from synapse.api.routes import ROUTE_QUERIES

from infra import template
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_agent, as_user, assert_error, assert_error_shape


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def post_raw(api: Api, mind: MindHandle, raw: bytes) -> Any:
    """POST /memory with exactly these bytes as a JSON body, as the mind's owner."""
    return api.call(
        "POST",
        "/memory",
        raw_body=raw,
        token=mind.jwt,
        headers={"Content-Type": "application/json", "X-Mind-Id": mind.id},
    )


def post_memory(api: Api, mind: MindHandle, body: Any) -> Any:
    """POST /memory with the body as UTF-8 JSON (not \\u-escaped), so sizes are what they look like."""
    return post_raw(api, mind, json.dumps(body, ensure_ascii=False).encode())


# ---------------------------------------------------------------- 422: each field rule


FIELD_RULES = [
    ("category", "hobby", "enum"),
    ("category", 3, "enum"),
    ("key", "", "length"),
    ("key", "k" * 129, "length"),
    ("key", "Home_City", "pattern"),
    ("key", "home-city", "pattern"),
    ("key", "home__city", "pattern"),
    ("key", "home_city\n", "pattern"),
    ("key", 42, "type"),
    ("content", "", "length"),
    ("content", "x" * (32 * 1024 + 1), "size"),
    ("content", "ü" * (16 * 1024 + 1), "size"),
    ("content", None, "type"),
    ("tags", "docker", "type"),
    ("tags", [f"t{i}" for i in range(21)], "max_items"),
    ("tags", ["   "], "length"),
    ("tags", ["x" * 65], "length"),
    ("tags", ["line\nbreak"], "characters"),
    ("tags[0]", [{"tag": "x"}], "type"),
    ("priority", "urgent", "enum"),
    ("priority", 1, "enum"),
    ("confidence", 1.5, "range"),
    ("confidence", -0.1, "range"),
    ("confidence", "0.5", "type"),
    ("expires_at", "2026-12-31T23:59:00", "timezone"),
    ("expires_at", "soon", "format"),
    ("expires_at", "0001-01-01T00:00:00+05:00", "range"),
    ("expires_at", 1767225540, "type"),
    ("source", "robot", "enum"),
    ("colour", "blue", "unknown_field"),
    ("id", "mem_chosen_by_client", "unknown_field"),
    ("version", 7, "unknown_field"),
]


@pytest.mark.parametrize(("field", "value", "rule"), FIELD_RULES)
def test_each_field_rule_is_a_422_naming_field_and_rule(
    api: Api, mind: MindHandle, field: str, value: Any, rule: str
) -> None:
    # Given a valid body with one field broken
    name = field.split("[")[0]
    body = memory_body(**{name: value})
    # When it is stored
    answer = post_memory(api, mind, body)
    # Then the answer is a 422 whose details name that field and rule
    assert_error(answer, 422, field=field, rule=rule)


def test_a_missing_content_is_a_422(api: Api, mind: MindHandle) -> None:
    # Content is the one required field: without category a write is a note, without key the server
    # derives one (docs/rules.md §1)
    body = memory_body()
    del body["content"]
    assert_error(post_memory(api, mind, body), 422, field="content", rule="required")


def test_several_broken_fields_are_all_named(api: Api, mind: MindHandle) -> None:
    error = assert_error(post_memory(api, mind, {"key": "Bad", "priority": "x"}), 422)
    named = {d["field"] for d in error["details"]}
    assert named == {"key", "priority", "content"}


PATCH_RULES = [
    ("category", "note", "immutable"),
    ("key", "another_key", "immutable"),
    ("content", None, "not_null"),
    ("tags", None, "not_null"),
    ("priority", None, "not_null"),
    ("confidence", None, "not_null"),
    ("content", "", "length"),
    ("confidence", 2, "range"),
    ("expires_at", "2030-01-01T00:00:00", "timezone"),
    ("verified", True, "unknown_field"),
]


@pytest.mark.parametrize(("field", "value", "rule"), PATCH_RULES)
def test_each_update_rule_is_a_422(api: Api, mind: MindHandle, field: str, value: Any, rule: str) -> None:
    memory_id = api.store(mind).json()["id"]
    answer = api.call("PUT", f"/memory/{memory_id}", json_body={field: value}, **as_user(mind))
    assert_error(answer, 422, field=field, rule=rule)
    # And nothing changed
    assert api.call("GET", f"/memory/{memory_id}", **as_user(mind)).json()["version"] == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [("/minds", {"name": ""}), ("/minds", {"name": "n" * 101}), ("/minds", {}), ("/minds", {"name": 5})],
)
def test_mind_name_rules(api: Api, mind: MindHandle, path: str, body: dict[str, Any]) -> None:
    assert_error(api.call("POST", path, token=mind.jwt, json_body=body), 422, field="name")


def test_key_label_rules(api: Api, mind: MindHandle) -> None:
    for label in ("", "l" * 101, 7):
        answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": label})
        assert_error(answer, 422, field="label")


# ---------------------------------------------------------------- 400 / 413 / 415


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"category": "fact",}',
        b"{'key': 'single quotes'}",
        b'{"content": "x"} trailing',
        b"\xff\xfe\x00garbage",
        b'{"confidence": NaN, "category": "fact", "key": "a", "content": "b"}',
        b'{"confidence": Infinity, "category": "fact", "key": "a", "content": "b"}',
        b'{"confidence": -Infinity, "category": "fact", "key": "a", "content": "b"}',
        b'{"confidence": 1e999, "category": "fact", "key": "a", "content": "b"}',
        b'{"content": "\\ud83d", "category": "fact", "key": "a"}',
        b'{"key": ' + b"9" * 5000 + b"}",
        b'{"tags": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    ],
)
def test_malformed_json_is_a_400(api: Api, mind: MindHandle, raw: bytes) -> None:
    answer = post_raw(api, mind, raw)
    assert_error(answer, 400)


@pytest.mark.parametrize("raw", [b"[]", b'["category", "fact"]', b'"a string"', b"42", b"null", b"true"])
def test_json_that_is_not_an_object_is_a_400(api: Api, mind: MindHandle, raw: bytes) -> None:
    answer = post_raw(api, mind, raw)
    assert "object" in assert_error(answer, 400)["message"]


def test_a_body_over_64_kib_is_a_413(api: Api, mind: MindHandle) -> None:
    # Given a JSON body one byte over 64 KiB (valid JSON, so the size alone decides)
    body = memory_body(content="")
    padding = 64 * 1024 + 1 - len(json.dumps(body).encode())
    body["content"] = "x" * padding
    assert len(json.dumps(body).encode()) == 64 * 1024 + 1
    # Then it is refused before anything else
    assert_error(post_memory(api, mind, body), 413)
    # And a mind rename is held to the same limit
    assert_error(
        api.call("PATCH", f"/minds/{mind.id}", token=mind.jwt, json_body={"name": "n" * 64 * 1024}), 413
    )


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"],
)
def test_a_body_that_is_not_json_is_a_415(api: Api, mind: MindHandle, content_type: str) -> None:
    answer = api.call(
        "POST",
        "/memory",
        raw_body=json.dumps(memory_body()).encode(),
        headers={"Content-Type": content_type, "X-Mind-Id": mind.id},
        token=mind.jwt,
    )
    assert_error(answer, 415)


def test_json_content_types_with_charset_or_suffix_are_accepted(api: Api, mind: MindHandle) -> None:
    for content_type in (
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/merge-patch+json",
    ):
        answer = api.call(
            "POST",
            "/memory",
            raw_body=json.dumps(memory_body()).encode(),
            headers={"Content-Type": content_type, "X-Mind-Id": mind.id},
            token=mind.jwt,
        )
        assert answer.status in (200, 201), answer.text


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"limit": "-1"}, "limit"),
        ({"limit": "2.5"}, "limit"),
        ({"limit": "²"}, "limit"),
        ({"limit": "9" * 5000}, "limit"),
        ({"limit": ""}, "limit"),
        ([("limit", "5"), ("limit", "6")], "limit"),
        ({"verified": "maybe"}, "verified"),
        ({"verified": "1"}, "verified"),
        ({"include_expired": "yes"}, "include_expired"),
        ({"category": "bogus"}, "category"),
        ({"priority": "urgent"}, "priority"),
        ({"source": "system"}, "source"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_bad_query_parameters_are_a_400(api: Api, mind: MindHandle, query: Any, field: str) -> None:
    answer = api.call("GET", "/memory", query=query, **as_user(mind))
    error = assert_error(answer, 400)
    assert field in error["message"]


@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "²", "9" * 5000, ""])
def test_a_non_numeric_if_match_is_a_400(api: Api, mind: MindHandle, value: str) -> None:
    memory_id = api.store(mind).json()["id"]
    answer = api.call(
        "PUT",
        f"/memory/{memory_id}",
        json_body={"content": "x"},
        token=mind.jwt,
        headers={"X-Mind-Id": mind.id, "If-Match": value},
    )
    assert "If-Match" in assert_error(answer, 400)["message"]


# ---------------------------------------------------------------- fuzz: nothing produces a 500

HOSTILE_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "🧠" * 50,
    "👨‍👩‍👧‍👦",
    "\uff46\uff55\uff4c\uff4c",
    "\u202eRTL",
    "null",
    "true",
    "{}",
    "[]",
    "' OR 1=1 --",
    "${jndi:ldap://x}",
    "../../etc/passwd",
    "%00%ff",
    "#",
    "MEM#fact#home_city",
    "k" * 129,
    "k" * 5000,
    "x" * 70_000,
    "mem_",
    "m_",
    "key_",
    "mk_",
    "Z",
    "²",
    "9" * 400,
]
HOSTILE_VALUES: list[Any] = [
    *HOSTILE_STRINGS,
    None,
    True,
    False,
    0,
    -1,
    2**63,
    10**400,
    -(10**300),
    1e308,
    5e-324,
    [],
    [None],
    ["x"] * 100,
    {},
    {"$ne": None},
    {"a": {"b": {"c": {}}}},
]
FIELDS = [
    "category",
    "key",
    "content",
    "tags",
    "priority",
    "confidence",
    "expires_at",
    "source",
    "mind_id",
    "",
]


def _random_text(rng: random.Random, size: int) -> str:
    alphabet = string.printable + "äöüßéñ€日本語🧠🔥\u200b\u0301\ufeff"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.4:
        return rng.choice(HOSTILE_VALUES)
    if roll < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {
        rng.choice(FIELDS) or _random_text(rng, 5): _random_json(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


def _hostile_body(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
    if kind == 1:
        return json.dumps(_random_json(rng)).encode()
    if kind == 2:  # a valid body with one field made hostile
        body = memory_body(tags=["a"], priority="high")
        body[rng.choice(FIELDS) or "extra"] = rng.choice(HOSTILE_VALUES)
        return json.dumps(body, ensure_ascii=rng.random() < 0.5).encode()
    if kind == 3:
        depth = rng.choice([10, 33, 200, 5000])
        return b'{"tags":' + b"[" * depth + b"]" * depth + b"}"
    if kind == 4:
        text = json.dumps(memory_body())
        cut = rng.randrange(len(text))
        return (text[:cut] + _random_text(rng, 3) + text[cut + 1 :]).encode("utf-8", "surrogatepass")
    return _random_text(rng, rng.randint(0, 200)).encode("utf-8", "surrogatepass")


def _hostile_headers(rng: random.Random, mind: MindHandle) -> tuple[str | None, dict[str, str]]:
    # Mostly valid credentials, so that most requests get past the authorizer into the handlers
    token: str | None = rng.choice(
        [mind.jwt] * 4
        + [mind.key] * 3
        + [None, "", "mk_" + _random_text(rng, 20), "eyJ." + _random_text(rng, 30)]
    )
    headers: dict[str, str] = {}
    if rng.random() < 0.6:
        headers["Content-Type"] = rng.choice(
            ["application/json", "text/plain", "", "application/json; charset=latin-1", _random_text(rng, 10)]
        )
    if rng.random() < 0.4:
        headers["X-Mind-Id"] = rng.choice(
            [mind.id, "m_" + _random_text(rng, 30), "", "m_" + "a" * 3000, _random_text(rng, 8)]
        )
    if rng.random() < 0.3:
        headers["If-Match"] = rng.choice(["1", "0", '"1"', 'W/"1"', "*", _random_text(rng, 6), "1" * 5000])
    if rng.random() < 0.2:
        headers["X-Mind-Key"] = rng.choice([mind.key, "mk_", _random_text(rng, 12)])
    if rng.random() < 0.1:
        headers["Authorization"] = rng.choice(
            ["Basic Zm9vOmJhcg==", "Bearer", "bearer  " + mind.jwt, "Digest x", _random_text(rng, 20)]
        )
    return token, headers


def _hostile_id(rng: random.Random, prefix: str) -> str:
    text = rng.choice([_random_text(rng, rng.randint(1, 40)), "x" * 3000, "%2F..%2F", "😀", "0", "-1"])
    text = text.replace("/", "_").replace("?", "_").replace("#", "_") or "x"
    return rng.choice([prefix + text, text, prefix + "A" * 64, prefix + "A" * 65])


def _hostile_query(rng: random.Random, method: str, path: str) -> list[tuple[str, str]]:
    """Hostile values of the parameters the route takes (an unknown name is a 400 before the handler:
    `routes.check_query`), and now and then a name it does not take."""
    route = next((r for r in template.routes() if r.method == method and r.pattern.match(path)), None)
    names = list(ROUTE_QUERIES[route.route_key] if route else ())
    if rng.random() < 0.1 or not names:
        names.append(_random_text(rng, 4))
    return [
        (
            rng.choice(names),
            rng.choice([*HOSTILE_STRINGS[:20], _random_text(rng, rng.randint(0, 50)), "5", "true"]),
        )
        for _ in range(rng.randint(0, min(5, len(names))))
    ]


def test_hostile_input_never_gives_a_500_and_every_error_has_specs_shape(api: Api) -> None:
    # Given two minds with a memory each, and a seeded generator of hostile requests
    rng = random.Random(20261130)
    mind, other = api.create_mind("user-1"), api.create_mind("user-2")
    own_id = api.store(mind, tags=["a", "b"]).json()["id"]
    other_id = api.store(other).json()["id"]
    statuses: dict[int, int] = {}
    for round_ in range(400):
        token, headers = _hostile_headers(rng, mind)
        choice = round_ % 8
        if choice == 0:
            method, path = "POST", "/memory"
        elif choice == 1:
            method, path = "PUT", f"/memory/{rng.choice([own_id, other_id, _hostile_id(rng, 'mem_')])}"
        elif choice == 2:
            method, path = (
                rng.choice(["GET", "DELETE"]),
                f"/memory/{rng.choice([other_id, _hostile_id(rng, 'mem_')])}",
            )
        elif choice == 3:
            method, path = "GET", "/memory"
        elif choice == 4:
            method, path = (
                "POST",
                f"/memory/{rng.choice([own_id, other_id, _hostile_id(rng, 'mem_')])}/verify",
            )
        elif choice == 5:
            method, path = rng.choice(["POST", "GET"]), "/minds"
        elif choice == 6:
            mind_id = rng.choice([other.id, _hostile_id(rng, "m_")])
            method, path = rng.choice(["GET", "PATCH", "DELETE"]), f"/minds/{mind_id}"
        else:
            mind_id = rng.choice([mind.id, other.id, _hostile_id(rng, "m_")])
            method, path = rng.choice(
                [
                    ("POST", f"/minds/{mind_id}/keys"),
                    ("GET", f"/minds/{mind_id}/keys"),
                    ("DELETE", f"/minds/{mind_id}/keys/{_hostile_id(rng, 'key_')}"),
                ]
            )
        body = _hostile_body(rng) if method in ("POST", "PUT", "PATCH") else b""
        # When the request is made
        answer = api.call(
            method, path, token=token, raw_body=body, headers=headers, query=_hostile_query(rng, method, path)
        )
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        # Then it is never a 500, and every error is SPEC's JSON error body
        context = f"{method} {path[:80]} headers={str(headers)[:200]} body={body[:200]!r}"
        assert answer.status < 500, f"{answer.status} for {context}: {answer.text[:300]}"
        if answer.status >= 400:
            try:
                assert_error_shape(answer)
            except AssertionError as failure:
                raise AssertionError(f"{context}: {failure}") from None
    # And the generator reached deep into the handlers, not only the authorizer
    assert (
        statuses.get(422, 0) > 10
        and statuses.get(400, 0) > 10
        and statuses.get(404, 0) > 10
        and statuses.get(401, 0) > 10
    ), statuses
    # And the other mind's memory was neither changed nor removed
    assert api.call("GET", f"/memory/{other_id}", **as_agent(other)).json()["version"] == 1
