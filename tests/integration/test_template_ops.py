"""What a deploy to a real account needs from template.yaml (issue 10), read from the template itself:
nothing has to exist beforehand (no SSM parameter, secrets generated, identity per AuthMode), nothing
is refused on a new account (no reserved concurrency), nothing fails silently (alarms, log retention),
nothing stateful disappears by accident (deletion policies), and it runs on arm64."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from typing import Any

import pytest

from infra import template

NO_VALUE = {"Ref": "AWS::NoValue"}
STATEFUL = {
    "AWS::DynamoDB::Table",
    "AWS::EFS::FileSystem",
    "AWS::SecretsManager::Secret",
    "AWS::SQS::Queue",
    "AWS::Logs::LogGroup",
    "AWS::Cognito::UserPool",
}


def _resources() -> dict[str, dict[str, Any]]:
    resources: dict[str, dict[str, Any]] = template.load()["Resources"]
    return resources


def _functions() -> dict[str, dict[str, Any]]:
    return template.resources("AWS::Serverless::Function")


def _globals() -> dict[str, Any]:
    function_globals: dict[str, Any] = template.load()["Globals"]["Function"]
    return function_globals


def _env() -> dict[str, Any]:
    variables: dict[str, Any] = _globals()["Environment"]["Variables"]
    return variables


def _events(kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, event["Properties"])
        for name, function in _functions().items()
        for event in (function["Properties"].get("Events") or {}).values()
        if event["Type"] == kind
    ]


def _get_att(value: Any) -> tuple[str, str] | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        name, attribute = value["Fn::GetAtt"]
        return str(name), str(attribute)
    return None


def _resolve(value: Any, conditions: dict[str, bool]) -> Any:
    """`value` with every Fn::If decided by `conditions` (AWS::NoValue entries dropped)."""
    if isinstance(value, dict):
        if "Fn::If" in value:
            name, when_true, when_false = value["Fn::If"]
            return _resolve(when_true if conditions[name] else when_false, conditions)
        return {k: _resolve(v, conditions) for k, v in value.items() if _resolve(v, conditions) != NO_VALUE}
    if isinstance(value, list):
        return [_resolve(v, conditions) for v in value if _resolve(v, conditions) != NO_VALUE]
    return value


def _auth_conditions(mode: str) -> dict[str, bool]:
    return {
        "IsCognito": mode == "cognito",
        "IsOidc": mode == "oidc",
        "IsSharedSecret": mode == "shared-secret",
        "HasDomain": False,
        "HasAllowedOrigins": False,
        "HasAlarmEmail": False,
        "SelfSignUpAllowed": False,
    }


def _created(mode: str) -> set[str]:
    """Logical ids of the resources a stack in this AuthMode creates."""
    conditions = _auth_conditions(mode)
    return {name for name, r in _resources().items() if conditions.get(r.get("Condition", ""), True)}


def _failure_queues() -> set[str]:
    """Queues that hold work Synapse gave up on: stream on-failure destinations and dead-letter queues."""
    found = set()
    for _, props in _events("DynamoDB"):
        destination = _get_att(props["DestinationConfig"]["OnFailure"]["Destination"])
        assert destination is not None
        found.add(destination[0])
    for queue in template.resources("AWS::SQS::Queue").values():
        redrive = queue["Properties"].get("RedrivePolicy")
        if redrive:
            target = _get_att(redrive["deadLetterTargetArn"])
            assert target is not None
            found.add(target[0])
    return found


def _alarms() -> list[dict[str, Any]]:
    return [alarm["Properties"] for alarm in template.resources("AWS::CloudWatch::Alarm").values()]


def _notifies_the_topic(alarm: dict[str, Any]) -> bool:
    return bool(alarm.get("AlarmActions") == [{"Ref": "AlarmTopic"}])


# ---------------------------------------------------------------- a new account accepts it


def test_no_function_reserves_concurrency() -> None:
    # Given every function (the indexer had 1, which a new account's quota of 10 refuses)
    reserving = [
        name for name, f in _functions().items() if "ReservedConcurrentExecutions" in f["Properties"]
    ]
    # Then none reserves concurrency
    assert reserving == []
    assert "ReservedConcurrentExecutions" not in _globals()


def test_the_indexer_stream_sets_its_parallelization_factor() -> None:
    (props,) = [p for name, p in _events("DynamoDB") if name == "IndexerFunction"]
    assert props["ParallelizationFactor"] == {"Ref": "IndexerParallelizationFactor"}
    parameter = template.load()["Parameters"]["IndexerParallelizationFactor"]
    assert (parameter["Default"], parameter["MinValue"], parameter["MaxValue"]) == (1, 1, 10)


def test_queue_triggers_have_a_maximum_concurrency() -> None:
    triggers = _events("SQS")
    assert triggers, "no SQS trigger found"
    for name, props in triggers:
        assert "MaximumConcurrency" in props.get("ScalingConfig", {}), name


# ---------------------------------------------------------------- nothing has to exist before a deploy


def _ssm_grants(mode: str = "cognito") -> dict[str, list[dict[str, Any]]]:
    """Every IAM statement granting an ssm: action in a stack of this AuthMode, by function."""
    grants: dict[str, list[dict[str, Any]]] = {}
    for name, function in _functions().items():
        for policy in _resolve(function["Properties"].get("Policies") or [], _auth_conditions(mode)):
            for statement in policy["Statement"]:
                actions = (
                    statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                )
                if any(str(a).lower().startswith("ssm:") for a in actions):
                    grants.setdefault(name, []).append(statement)
    return grants


def _stack_parameter_arn(name: dict[str, Any]) -> str:
    """The ARN of an SSM parameter whose Name is this !Sub (a name starting with "/")."""
    return "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter" + name["Fn::Sub"]


def test_no_ssm_parameter_has_to_exist() -> None:
    # Given the template's text and every IAM statement in it
    text = template.TEMPLATE.read_text()
    # Then nothing resolves an SSM parameter or takes one as a parameter type
    assert "{{resolve:ssm" not in text
    assert not [p for p in template.load()["Parameters"].values() if "SSM" in str(p["Type"])]
    assert not [name for name in _env() if name.endswith("_PARAM")]
    # And the only SSM reads are GetParameter on parameters this stack creates, named by ARN
    created = {
        _stack_parameter_arn(p["Properties"]["Name"])
        for p in template.resources("AWS::SSM::Parameter").values()
    }
    statements = [statement for found in _ssm_grants().values() for statement in found]
    assert statements
    for statement in statements:
        assert statement["Action"] == "ssm:GetParameter", statement
        assert statement["Resource"]["Fn::Sub"] in created, statement


def test_every_secret_the_functions_read_is_generated_by_the_stack() -> None:
    # Given the secret ARNs the functions are given
    secrets = {name: _resolve(value, _auth_conditions("shared-secret")) for name, value in _env().items()}
    referenced = {
        "SYNAPSE_KEY_PEPPER_SECRET_ARN": secrets["SYNAPSE_KEY_PEPPER_SECRET_ARN"],
        "SYNAPSE_JWT_SECRET_ARN": secrets["SYNAPSE_JWT_SECRET_ARN"],
    }
    # Then each names a Secrets Manager secret of this stack with a generated value
    for variable, ref in referenced.items():
        assert isinstance(ref, dict) and "Ref" in ref, variable
        secret = _resources()[ref["Ref"]]
        assert secret["Type"] == "AWS::SecretsManager::Secret", variable
        assert "GenerateSecretString" in secret["Properties"], variable
        assert "SecretString" not in secret["Properties"], variable


def _granted_secrets(function: dict[str, Any], mode: str) -> set[str]:
    granted = set()
    for policy in _resolve(function["Properties"].get("Policies") or [], _auth_conditions(mode)):
        for statement in policy["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("secretsmanager:") for a in actions):
                assert actions == ["secretsmanager:GetSecretValue"], actions
                granted.add(statement["Resource"]["Ref"])
    return granted


@pytest.mark.parametrize("mode", ["cognito", "oidc", "shared-secret"])
def test_secret_reads_are_granted_on_exactly_the_stacks_secrets(mode: str) -> None:
    created = _created(mode)
    readers = {name: _granted_secrets(f, mode) for name, f in _functions().items()}
    granted = set().union(*readers.values())
    # Then only secrets this stack creates in this mode are readable, and only by GetSecretValue
    assert granted <= created, granted - created
    # And the JWT secret exists, and only the authorizer reads it, in shared-secret mode alone
    jwt_readers = sorted(name for name, secrets in readers.items() if "JwtSecret" in secrets)
    assert jwt_readers == (["AuthorizerFunction"] if mode == "shared-secret" else [])
    assert ("JwtSecret" in created) == (mode == "shared-secret")


def test_functions_in_the_vpc_that_read_a_secret_reach_secrets_manager() -> None:
    # Given the functions inside the search VPC (no NAT) that are granted a secret
    in_vpc = {name for name, f in _functions().items() if "VpcConfig" in f["Properties"]}
    needing = {name for name in in_vpc if _granted_secrets(_functions()[name], "cognito")}
    assert needing, "expected search (cursor signing) to read the pepper"
    # Then the VPC has a Secrets Manager interface endpoint, and no endpoint nothing uses
    endpoints = template.resources("AWS::EC2::VPCEndpoint").values()
    services = sorted(json.dumps(e["Properties"]["ServiceName"]) for e in endpoints)
    assert any(".secretsmanager" in s for s in services), services
    assert not any(".ssm" in s for s in services), services


# ---------------------------------------------------------------- identity per AuthMode


def test_auth_mode_defaults_to_cognito_and_offers_three_modes() -> None:
    parameter = template.load()["Parameters"]["AuthMode"]
    assert parameter["Default"] == "cognito"
    assert sorted(parameter["AllowedValues"]) == ["cognito", "oidc", "shared-secret"]
    assert "KeyPepperParameterName" not in template.load()["Parameters"]
    assert "JwtSecretParameterName" not in template.load()["Parameters"]


def test_cognito_mode_creates_a_pool_whose_tokens_the_functions_verify() -> None:
    # Given the stack in its default mode
    created = _created("cognito")
    env = _resolve(_env(), _auth_conditions("cognito"))
    # Then it has a user pool, a public app client with the three flows, and a hosted UI domain
    assert {"UserPool", "UserPoolClient", "UserPoolDomain"} <= created
    client = _resources()["UserPoolClient"]["Properties"]
    assert client["GenerateSecret"] is False
    assert sorted(client["ExplicitAuthFlows"]) == [
        "ALLOW_REFRESH_TOKEN_AUTH",
        "ALLOW_USER_PASSWORD_AUTH",
        "ALLOW_USER_SRP_AUTH",
    ]
    assert client["AllowedOAuthFlows"] == ["code"]
    assert _resources()["UserPool"]["Properties"]["UsernameAttributes"] == ["email"]
    # And the functions verify against the pool's JWKS, issuer and app client
    assert env["SYNAPSE_AUTH_MODE"] == {"Ref": "AuthMode"}
    assert env["SYNAPSE_JWKS_URL"]["Fn::Sub"].endswith("/${UserPool}/.well-known/jwks.json")
    assert (
        env["SYNAPSE_JWT_ISSUER"]["Fn::Sub"]
        == "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"
    )
    assert "SYNAPSE_JWT_CLIENT_ID" not in env  # the id itself is for local runs (no cycle: below)
    parameter = _resources()["UserPoolClientIdParameter"]
    assert parameter["Properties"]["Value"] == {"Ref": "UserPoolClient"}
    assert env["SYNAPSE_JWT_CLIENT_ID_PARAMETER"] == parameter["Properties"]["Name"]
    assert env["SYNAPSE_JWT_SECRET_ARN"] == ""


def test_oidc_mode_uses_the_providers_parameters_and_creates_no_pool() -> None:
    created = _created("oidc")
    env = _resolve(_env(), _auth_conditions("oidc"))
    assert not {"UserPool", "UserPoolClient", "UserPoolDomain", "JwtSecret"} & created
    assert env["SYNAPSE_JWKS_URL"] == {"Ref": "JwksUrl"}
    assert env["SYNAPSE_JWT_ISSUER"] == {"Ref": "JwtIssuer"}
    assert env["SYNAPSE_JWT_AUDIENCE"] == {"Ref": "JwtAudience"}
    assert env["SYNAPSE_JWT_CLIENT_ID_PARAMETER"] == ""


def test_shared_secret_mode_signs_with_a_generated_secret_and_no_jwks() -> None:
    created = _created("shared-secret")
    env = _resolve(_env(), _auth_conditions("shared-secret"))
    assert "JwtSecret" in created and "UserPool" not in created
    assert env["SYNAPSE_JWT_SECRET_ARN"] == {"Ref": "JwtSecret"}
    assert env["SYNAPSE_JWKS_URL"] == ""


def test_outputs_name_what_each_mode_signs_in_with() -> None:
    outputs = template.load()["Outputs"]
    assert {"ApiUrl", "UserPoolId", "UserPoolClientId", "HostedUiUrl", "JwtSecretArn"} <= set(outputs)
    for name in ("UserPoolId", "UserPoolClientId", "HostedUiUrl"):
        assert outputs[name]["Condition"] == "IsCognito", name
    assert outputs["JwtSecretArn"]["Condition"] == "IsSharedSecret"


# ---------------------------------------------------------------- limits reach the code


def test_limit_parameters_are_wired_to_the_settings_the_code_reads() -> None:
    parameters = template.load()["Parameters"]
    wired = {
        "SYNAPSE_MAX_MINDS_PER_USER": ("MaxMindsPerUser", 100),
        "SYNAPSE_MAX_MEMBERS_PER_MIND": ("MaxMembersPerMind", 50),
        "SYNAPSE_MAX_PENDING_INVITATIONS": ("MaxPendingInvitations", 20),
        "SYNAPSE_MIND_RATE_LIMIT": ("MindRateLimitPerMinute", 600),
        "SYNAPSE_HOOK_RATE_LIMIT": ("HookRateLimitPerMinute", 120),
    }
    for variable, (parameter, default) in wired.items():
        assert _env()[variable] == {"Ref": parameter}, variable
        assert parameters[parameter]["Default"] == default, parameter


# ---------------------------------------------------------------- nothing fails silently


def test_every_function_logs_to_its_own_group_with_retention() -> None:
    groups = template.resources("AWS::Logs::LogGroup")
    used: list[str] = []
    for name, function in _functions().items():
        # Given each function's logging configuration
        logging = function["Properties"].get("LoggingConfig") or {}
        group = logging.get("LogGroup")
        # Then it names a log group of this stack, one per function, that keeps events LogRetentionDays
        assert isinstance(group, dict) and group.get("Ref") in groups, f"{name}: no LoggingConfig.LogGroup"
        assert groups[group["Ref"]]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name
        used.append(group["Ref"])
    assert len(used) == len(set(used)), "two functions share a log group"
    assert template.load()["Parameters"]["LogRetentionDays"]["Default"] == 30


def test_the_api_access_log_has_the_same_retention() -> None:
    api = next(iter(template.resources("AWS::Serverless::HttpApi").values()))
    destination = _get_att(api["Properties"]["AccessLogSettings"]["DestinationArn"])
    assert destination is not None
    group = _resources()[destination[0]]
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_every_failure_queue_alarms_on_its_first_message() -> None:
    # Given the failure queues (stream on-failure destinations and dead-letter queues)
    queues = _failure_queues()
    assert queues == {"IndexerFailures", "WebhookStreamFailures", "WebhookDeadLetters"}
    # Then each has an alarm on visible messages > 0 that notifies the alarm topic
    for queue in queues:
        matching = [
            alarm
            for alarm in _alarms()
            if alarm.get("MetricName") == "ApproximateNumberOfMessagesVisible"
            and alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
        ]
        assert len(matching) == 1, queue
        (alarm,) = matching
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0), queue
        assert _notifies_the_topic(alarm), queue


def test_every_stream_consumer_alarms_on_its_iterator_age() -> None:
    consumers = {name for name, _ in _events("DynamoDB")}
    assert "IndexerFunction" in consumers
    for function in consumers:
        matching = [
            alarm
            for alarm in _alarms()
            if alarm.get("MetricName") == "IteratorAge"
            and alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
        ]
        assert len(matching) == 1 and _notifies_the_topic(matching[0]), function


def test_functions_no_http_caller_waits_on_alarm_on_errors_and_throttles() -> None:
    # Given the functions that are not a route (the authorizer, stream, queue and schedule functions)
    routed = {name for name, _ in _events("HttpApi")}
    unrouted = set(_functions()) - routed
    assert {"AuthorizerFunction", "IndexerFunction", "DeliverWebhookFunction"} <= unrouted
    # Then each has an Errors and a Throttles alarm of its own
    for function in unrouted:
        for metric in ("Errors", "Throttles"):
            assert [
                alarm
                for alarm in _alarms()
                if alarm.get("MetricName") == metric
                and alarm.get("Dimensions") == [{"Name": "FunctionName", "Value": {"Ref": function}}]
                and _notifies_the_topic(alarm)
            ], f"{function}: no {metric} alarm"


def test_the_api_alarms_on_its_5xx_rate_and_p95_latency() -> None:
    # Route functions answer through the API: a crash, timeout or throttle of any of them is a 5xx there
    metrics = [
        m["MetricStat"]["Metric"]["MetricName"]
        for alarm in _alarms()
        for m in alarm.get("Metrics", [])
        if "MetricStat" in m
    ]
    assert "5xx" in metrics and "Count" in metrics
    latency = [a for a in _alarms() if a.get("MetricName") == "Latency"]
    assert len(latency) == 1 and latency[0]["ExtendedStatistic"] == "p95"
    assert all(_notifies_the_topic(alarm) for alarm in _alarms())


def test_alarm_email_is_optional() -> None:
    (subscription,) = template.resources("AWS::SNS::Subscription").values()
    assert subscription["Condition"] == "HasAlarmEmail"
    assert template.load()["Parameters"]["AlarmEmail"]["Default"] == ""
    assert template.resources("AWS::CloudWatch::Dashboard")


# ---------------------------------------------------------------- cost, state and names


def test_functions_and_layer_are_arm64() -> None:
    assert _globals()["Architectures"] == ["arm64"]
    assert not [name for name, f in _functions().items() if "Architectures" in f["Properties"]]
    for layer in template.resources("AWS::Serverless::LayerVersion").values():
        assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
        assert layer["Metadata"]["BuildArchitecture"] == "arm64"


def test_every_stateful_resource_says_what_happens_on_delete_and_replace() -> None:
    stateful = {name: r for name, r in _resources().items() if r["Type"] in STATEFUL}
    assert len(stateful) > 40
    for name, resource in stateful.items():
        assert resource.get("DeletionPolicy") in {"Retain", "Delete"}, name
        assert resource.get("UpdateReplacePolicy") in {"Retain", "Delete"}, name
    # The system of record, and what makes it readable, stays after `sam delete`
    for name in ("MemoriesTable", "MindsTable", "KeyPepperSecret", "UserPool", "IndexFileSystem"):
        assert stateful[name]["DeletionPolicy"] == "Retain", name


def test_a_custom_domain_is_optional_and_then_the_only_way_in() -> None:
    # Hook URLs are built from the request's domain name, so with the execute-api URL off they carry it
    assert template.load()["Parameters"]["DomainName"]["Default"] == ""
    domain = template.resources("AWS::ApiGatewayV2::DomainName")
    mapping = template.resources("AWS::ApiGatewayV2::ApiMapping")
    assert [r["Condition"] for r in [*domain.values(), *mapping.values()]] == ["HasDomain", "HasDomain"]
    api = next(iter(template.resources("AWS::Serverless::HttpApi").values()))
    assert api["Properties"]["DisableExecuteApiEndpoint"] == {"Fn::If": ["HasDomain", True, False]}
    assert "HasDomain" in json.dumps(template.load()["Outputs"]["ApiUrl"])


# ---------------------------------------------------------------- the console signs in on the first deploy

_CONSOLE_NAMES = {
    "HttpApi": "a1b2c3d4e5",
    "AWS::Region": "eu-west-1",
    "AWS::URLSuffix": "amazonaws.com",
    "DomainName": "api.example.com",
    "CallbackUrls": ["http://localhost:8976/callback", "https://app.example.com/cb"],
}


def _evaluate(value: Any, names: dict[str, Any]) -> Any:
    """Ref, Fn::Sub, Fn::Join and Fn::Split as CloudFormation computes them, with these values."""
    if isinstance(value, list):
        return [_evaluate(v, names) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        return names[value["Ref"]]
    if "Fn::Join" in value:
        separator, items = value["Fn::Join"]
        return separator.join(_evaluate(items, names))
    if "Fn::Split" in value:
        separator, text = value["Fn::Split"]
        return _evaluate(text, names).split(separator)
    text, local = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]
    known = {**names, **{k: _evaluate(v, names) for k, v in local.items()}}
    return re.sub(r"\$\{([\w:]+)\}", lambda found: str(known[found[1]]), text)


@pytest.mark.parametrize("has_domain", [False, True])
def test_the_app_client_knows_the_consoles_url_from_the_first_deploy(has_domain: bool) -> None:
    # Given the stack, with the execute-api URL or a custom domain
    conditions = {**_auth_conditions("cognito"), "HasDomain": has_domain}
    client = _resolve(_resources()["UserPoolClient"]["Properties"], conditions)
    api_url = _evaluate(_resolve(template.load()["Outputs"]["ApiUrl"]["Value"], conditions), _CONSOLE_NAMES)
    # Then Cognito may send the code back to the console at the API's own URL - exactly the
    # redirect_uri auth.js sends (origin + path of the page at /console) - and to CallbackUrls
    console = f"{api_url}/console"
    assert console == (
        "https://api.example.com/console"
        if has_domain
        else "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/console"
    )
    assert (
        "`${location.origin}${location.pathname}`"
        in (template.ROOT / "functions/console/static/auth.js").read_text()
    )
    expected = [*_CONSOLE_NAMES["CallbackUrls"], console]
    assert _evaluate(client["CallbackURLs"], _CONSOLE_NAMES) == expected
    assert _evaluate(client["LogoutURLs"], _CONSOLE_NAMES) == expected


def _names_in(value: Any) -> set[str]:
    """Logical ids a value names: Ref, Fn::GetAtt, and ${X} or ${X.Attribute} in Fn::Sub."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= _names_in(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                found.add(item)
            elif key == "Fn::GetAtt":
                found.add(str(item[0]))
            elif key == "Fn::Sub":
                text, local = (item, {}) if isinstance(item, str) else item
                found |= {n.split(".")[0] for n in re.findall(r"\$\{([^}!]+)\}", text)} - set(local)
                found |= _names_in(local)
            else:
                found |= _names_in(item)
    return found


def test_only_the_authorizer_and_the_console_learn_the_client_id() -> None:
    # Given what every function is given (its own properties and the globals)
    client = {"UserPoolClient", "UserPoolClientIdParameter"}
    # Then none names the app client or its parameter (that would close the cycle below)
    assert not _names_in(_globals()) & client
    assert not [name for name, f in _functions().items() if _names_in(f) & client]
    # And only the two that check or hand out the id may read it, on exactly its parameter's ARN
    arn = _stack_parameter_arn(_resources()["UserPoolClientIdParameter"]["Properties"]["Name"])
    grants = _ssm_grants()
    assert sorted(grants) == ["AuthorizerFunction", "ConsoleFunction"]
    assert all(s["Resource"] == {"Fn::Sub": arn} for found in grants.values() for s in found)
    # In cognito mode only: the other modes have no client id
    assert _ssm_grants("oidc") == _ssm_grants("shared-secret") == {}


def _dependencies(document: dict[str, Any]) -> dict[str, set[str]]:
    """Who waits for whom at deploy, with the edges SAM adds: a function gets the globals, and an
    HttpApi waits for every function routed on it (its generated routes name their ARNs). A name SAM
    generates (HttpApiApiGatewayDefaultStage, XFunctionRole) counts as the resource it comes from."""
    resources = document["Resources"]
    function_globals = document.get("Globals", {}).get("Function", {})

    def owner(name: str) -> str | None:
        if name in resources:
            return name
        prefixes = [r for r in resources if name.startswith(r)]
        return max(prefixes, key=len) if prefixes else None

    graph: dict[str, set[str]] = {name: set() for name in resources}
    for name, resource in resources.items():
        body = {k: v for k, v in resource.items() if k != "DependsOn"}
        depends = resource.get("DependsOn", [])
        named = _names_in(body) | ({depends} if isinstance(depends, str) else set(depends))
        if resource["Type"] == "AWS::Serverless::Function":
            events = resource["Properties"].get("Events") or {}
            routes = {k: e for k, e in events.items() if e["Type"] == "HttpApi"}
            body["Properties"] = {
                **resource["Properties"],
                "Events": {k: e for k, e in events.items() if k not in routes},
            }
            named = _names_in(body) | _names_in(function_globals) | named - _names_in(list(routes.values()))
            for route in routes.values():
                api = route["Properties"]["ApiId"]["Ref"]
                graph.setdefault(api, set()).add(name)
        graph[name] |= {o for o in map(owner, named) if o is not None and o != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One dependency cycle, or [] (depth-first search, iterative)."""
    state: dict[str, int] = {}
    for start in graph:
        if start in state:
            continue
        path, todo = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            following = next(todo[-1], None)
            if following is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                todo.append(iter(sorted(graph[following])))
    return []


def test_the_stack_has_no_dependency_cycle() -> None:
    # Given who waits for whom (CloudFormation refuses a cycle only at deploy; sam validate passes it)
    graph = _dependencies(template.load())
    # Then the app client, which names the HttpApi, is not waited for by anything the HttpApi needs
    assert "HttpApi" in graph["UserPoolClient"]
    assert _cycle(graph) == []


def test_the_cycle_check_finds_the_cycle_a_client_id_reference_makes() -> None:
    # Given the template as it would be with the id itself in the functions' environment
    document = json.loads(json.dumps(template.load()))
    document["Globals"]["Function"]["Environment"]["Variables"]["SYNAPSE_JWT_CLIENT_ID"] = {
        "Ref": "UserPoolClient"
    }
    # Then the walk sees the cycle through the HttpApi
    cycle = _cycle(_dependencies(document))
    assert {"UserPoolClient", "HttpApi"} <= set(cycle)


# ---------------------------------------------------------------- the template's env is what the code reads

_DEPLOYED = {
    "AWS::Region": "eu-west-1",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "synapse-dev",
    "UserPool": "eu-west-1_AbCdEf123",
    "UserPoolClient": "5example0client0id0abcdefg",
    "KeyPepperSecret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:KeyPepperSecret-AbCdEf",
    "JwtSecret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:JwtSecret-AbCdEf",
    "MemoriesTable": "synapse-dev-MemoriesTable-1",
    "MindsTable": "synapse-dev-MindsTable-1",
    "JwksUrl": "https://idp.example.com/.well-known/jwks.json",
    "JwtIssuer": "https://idp.example.com/",
    "JwtAudience": "synapse",
    "JwtAlgorithms": "",
    "MaxMindsPerUser": "100",
    "MaxMembersPerMind": "50",
    "MaxPendingInvitations": "20",
    "MindRateLimitPerMinute": "600",
    "HookRateLimitPerMinute": "120",
    "LogLevel": "INFO",
}


def _deployed_value(value: Any, mode: str) -> str:
    """An environment value as CloudFormation would set it, for a stack in `mode` (Ref/Sub/If only)."""
    value = _resolve(value, _auth_conditions(mode))
    names = {**_DEPLOYED, "AuthMode": mode}
    if isinstance(value, dict) and "Ref" in value:
        return names[value["Ref"]]
    if isinstance(value, dict) and "Fn::Sub" in value:
        return re.sub(r"\$\{([\w:]+)\}", lambda found: names[found[1]], value["Fn::Sub"])
    assert isinstance(value, str), value
    return value


@pytest.mark.parametrize("mode", ["cognito", "oidc", "shared-secret"])
def test_the_settings_accept_the_environment_each_auth_mode_deploys(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.core import settings

    # Given the environment a function gets in a stack of this AuthMode (no local values)
    for name in [n for n in os.environ if n.startswith("SYNAPSE_")]:
        monkeypatch.delenv(name)
    for name, value in _env().items():
        monkeypatch.setenv(name, _deployed_value(value, mode))
    # When the layer reads its settings, as at a cold start
    settings.get_settings.cache_clear()
    try:
        read = settings.get_settings()
    finally:
        settings.get_settings.cache_clear()
    # Then it verifies people's tokens the way that mode means, and reads the secrets by ARN
    pool_issuer = f"https://cognito-idp.eu-west-1.amazonaws.com/{_DEPLOYED['UserPool']}"
    expected = {
        "cognito": (
            "cognito",
            pool_issuer,
            f"{pool_issuer}/.well-known/jwks.json",
            "/synapse/synapse-dev/cognito-client-id",
        ),
        "oidc": ("oidc", _DEPLOYED["JwtIssuer"], _DEPLOYED["JwksUrl"], ""),
        "shared-secret": ("shared-secret", _DEPLOYED["JwtIssuer"], "", ""),
    }[mode]
    assert (read.auth_mode, read.jwt_issuer, read.jwks_url, read.jwt_client_id_parameter) == expected
    assert read.key_pepper_arn == _DEPLOYED["KeyPepperSecret"]
    assert read.jwt_secret_arn == (_DEPLOYED["JwtSecret"] if mode == "shared-secret" else "")
    assert read.jwt_algorithms == (("HS256",) if mode == "shared-secret" else ("RS256", "ES256"))
    assert (read.memories_table, read.minds_table) == (_DEPLOYED["MemoriesTable"], _DEPLOYED["MindsTable"])
    limits = settings.get_limits()
    assert (limits.max_minds_per_user, limits.mind_rate_limit, limits.hook_rate_limit) == (100, 600, 120)


# ------------------------------------------------------- deploy day: cost, sign-up, region, authorizer

DEPLOY_DOCS = template.ROOT / "docs" / "deploy.md"
SAMCONFIG = template.ROOT / "samconfig.toml"
HOURS_A_MONTH = 730


def _deploy_section(heading: str) -> str:
    text = DEPLOY_DOCS.read_text(encoding="utf-8")
    assert f"\n{heading}\n" in text, f"docs/deploy.md has no {heading!r}"
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def _cost_rows() -> dict[str, list[str]]:
    """The idle-cost table of docs/deploy.md: each row's cells, keyed by its first cell."""
    rows = {}
    for line in _deploy_section("## What it costs").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells
    return rows


def _row(rows: dict[str, list[str]], starts: str) -> list[str]:
    (found,) = [cells for name, cells in rows.items() if name.startswith(starts)]
    return found


def _dollars(cell: str) -> float:
    return float(re.findall(r"\$([\d,]+\.\d\d)", cell)[0].replace(",", ""))


def _alarm_metrics(alarm: dict[str, Any]) -> int:
    """What CloudWatch bills an alarm as: one alarm metric, or each metric its math reads."""
    metrics = alarm.get("Metrics")
    return sum(1 for metric in metrics if "MetricStat" in metric) if metrics else 1


def test_the_idle_cost_table_counts_what_the_template_creates() -> None:
    # Given the idle-cost table of docs/deploy.md
    rows = _cost_rows()
    # Then its counts are the template's: the interface endpoint's zones, the alarms and the metrics
    # they are billed by, the secrets, log groups, schedules, SQS triggers, dashboards and tables
    endpoints = [
        r["Properties"]
        for r in template.resources("AWS::EC2::VPCEndpoint").values()
        if r["Properties"].get("VpcEndpointType") == "Interface"
    ]
    assert len(endpoints) == 1
    zones = len(endpoints[0]["SubnetIds"])
    endpoint = _row(rows, "Secrets Manager interface endpoint")
    assert f"1 endpoint in {zones} AZs" in endpoint[1]
    assert _dollars(endpoint[3]) == round(zones * HOURS_A_MONTH * 0.01, 2)
    alarms = _row(rows, "CloudWatch alarms")
    billed = sum(_alarm_metrics(alarm) for alarm in _alarms())
    assert f"{len(_alarms())} alarms, {billed} alarm metrics" in alarms[1]
    assert _dollars(alarms[3]) == round(billed * 0.10, 2)
    secrets = template.resources("AWS::SecretsManager::Secret")
    always = [name for name, r in secrets.items() if "Condition" not in r]
    assert _row(rows, "secrets")[1].startswith(f"{len(always)} (`{always[0]}`); {len(secrets)} in")
    functions = _functions()
    log_groups = template.resources("AWS::Logs::LogGroup")
    assert (
        f"{len(log_groups)} ({len(functions)} functions, the API's access log)" == _row(rows, "log groups")[1]
    )
    assert _row(rows, "the schedules'")[1].startswith(f"{len(_events('Schedule'))} schedules")
    assert _row(rows, "SQS")[1].startswith(f"{len(_events('SQS'))} SQS trigger")
    assert _row(rows, "dashboard")[1] == str(len(template.resources("AWS::CloudWatch::Dashboard")))
    tables = template.resources("AWS::DynamoDB::Table")
    assert all(
        t["Properties"]["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
        for t in tables.values()
    )
    assert _row(rows, "DynamoDB point-in-time recovery")[1] == f"{len(tables)} tables"
    # And the total is the sum of the fixed rows (those with one price, in cognito mode)
    fixed = ["Secrets Manager", "CloudWatch alarms", "secrets", "custom metrics", "the schedules'"]
    total = sum(_dollars(_row(rows, name)[3]) for name in fixed)
    assert f"≈ ${round(total):,}" in _row(rows, "**total**")[3]
    section = _deploy_section("## What it costs")
    assert "list prices" in section and re.search(r"table of \d{4}-\d\d-\d\d", section)


def test_self_sign_up_is_off_by_default_and_in_both_environments() -> None:
    # Given the parameter and the environments samconfig.toml deploys
    parameter = template.load()["Parameters"]["SelfSignUp"]
    config = tomllib.loads(SAMCONFIG.read_text(encoding="utf-8"))
    # Then nobody can sign up unless an environment says so, and none does
    assert parameter["Default"] == "false"
    for env in ("default", "prod"):
        overrides = config[env]["deploy"]["parameters"]["parameter_overrides"]
        assert 'SelfSignUp="true"' not in overrides, env
    # And the docs say what turning it on exposes, and that the cap goes with it
    text = DEPLOY_DOCS.read_text(encoding="utf-8")
    assert "`SelfSignUp=false` (the default, and both environments' setting)" in text
    assert 'SelfSignUp="true" MaxMindsPerUser="3"' in text
    assert "dev `AuthMode=cognito SelfSignUp=false" in text


def test_dev_deploys_to_aws_default_region_and_prod_stays_pinned() -> None:
    # Given samconfig.toml
    config = tomllib.loads(SAMCONFIG.read_text(encoding="utf-8"))
    # Then dev names no region (sam then asks boto: AWS_DEFAULT_REGION), prod names one
    assert "region" not in config["default"]["global"]["parameters"]
    assert re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", config["prod"]["global"]["parameters"]["region"])
    # And make hands sam AWS_DEFAULT_REGION: us-east-1 unless the command line or the shell sets it
    make = shutil.which("make")
    if make is not None:
        probe = ["--eval", "region-probe: ; @echo $$AWS_DEFAULT_REGION", "region-probe"]
        clean = {k: v for k, v in os.environ.items() if k != "AWS_DEFAULT_REGION"}

        def recipe_sees(*args: str, env: dict[str, str] = clean) -> str:
            done = subprocess.run(  # noqa: S603 - our own Makefile, a probe target
                [make, "-s", "--no-print-directory", *probe, *args],
                cwd=template.ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            return done.stdout.strip()

        assert recipe_sees() == "us-east-1"
        assert recipe_sees("AWS_DEFAULT_REGION=eu-central-1") == "eu-central-1"
        assert recipe_sees(env=clean | {"AWS_DEFAULT_REGION": "eu-west-1"}) == "eu-west-1"
    # And no command in the docs names a region of its own
    text = DEPLOY_DOCS.read_text(encoding="utf-8")
    assert "--region us-east-1" not in text
    assert "make deploy ENV=dev AWS_DEFAULT_REGION=eu-central-1" in text


def test_the_authorizer_runs_on_every_request_with_no_identity_source() -> None:
    # Given the API's authorizer
    api = next(iter(template.resources("AWS::Serverless::HttpApi").values()))["Properties"]["Auth"]
    authorizer = api["Authorizers"][api["DefaultAuthorizer"]]
    # Then nothing is cached and no identity source is required: with one, API Gateway answers a bare
    # 401 itself to a request without it (an X-Mind-Key request), never reaching the authorizer
    assert authorizer["Identity"] == {"ReauthorizeEvery": 0}
    assert (authorizer["AuthorizerPayloadFormatVersion"], authorizer["EnableSimpleResponses"]) == (
        "2.0",
        True,
    )
    # And the docs give the decision with its figures
    section = _deploy_section("## What it costs").split("### The authorizer runs on every request", 1)
    assert len(section) == 2, "docs/deploy.md does not explain the authorizer's caching"
    reasons = section[1]
    for figure in ("$0.41 per million requests", "$0.21", "$12.15", "X-Mind-Key", "60 s"):
        assert figure in reasons, figure
