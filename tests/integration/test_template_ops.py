"""What a deploy to a real account needs from template.yaml (issue 10), read from the template itself:
nothing has to exist beforehand (no SSM parameter, secrets generated, identity per AuthMode), nothing
is refused on a new account (no reserved concurrency), nothing fails silently (alarms, log retention),
nothing stateful disappears by accident (deletion policies), and it runs on arm64."""

from __future__ import annotations

import json
import os
import re
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


def test_no_ssm_parameter_has_to_exist() -> None:
    # Given the template's text and every IAM statement in it
    text = template.TEMPLATE.read_text()
    # Then nothing resolves an SSM parameter, takes one as a parameter type, or is granted SSM reads
    assert "{{resolve:ssm" not in text
    assert not [p for p in template.load()["Parameters"].values() if "SSM" in str(p["Type"])]
    assert "ssm:" not in json.dumps(template.load()).lower()
    assert not [name for name in _env() if name.endswith("_PARAM")]


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
    for policy in function["Properties"].get("Policies") or []:
        for statement in _resolve(policy, _auth_conditions(mode))["Statement"]:
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
    assert env["SYNAPSE_JWT_CLIENT_ID"] == {"Ref": "UserPoolClient"}
    assert env["SYNAPSE_JWT_SECRET_ARN"] == ""


def test_oidc_mode_uses_the_providers_parameters_and_creates_no_pool() -> None:
    created = _created("oidc")
    env = _resolve(_env(), _auth_conditions("oidc"))
    assert not {"UserPool", "UserPoolClient", "UserPoolDomain", "JwtSecret"} & created
    assert env["SYNAPSE_JWKS_URL"] == {"Ref": "JwksUrl"}
    assert env["SYNAPSE_JWT_ISSUER"] == {"Ref": "JwtIssuer"}
    assert env["SYNAPSE_JWT_AUDIENCE"] == {"Ref": "JwtAudience"}
    assert env["SYNAPSE_JWT_CLIENT_ID"] == ""


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


# ---------------------------------------------------------------- the template's env is what the code reads

_DEPLOYED = {
    "AWS::Region": "eu-west-1",
    "AWS::URLSuffix": "amazonaws.com",
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
            _DEPLOYED["UserPoolClient"],
        ),
        "oidc": ("oidc", _DEPLOYED["JwtIssuer"], _DEPLOYED["JwksUrl"], None),
        "shared-secret": ("shared-secret", _DEPLOYED["JwtIssuer"], "", None),
    }[mode]
    assert (read.auth_mode, read.jwt_issuer, read.jwks_url, read.jwt_client_id) == expected
    assert read.key_pepper_arn == _DEPLOYED["KeyPepperSecret"]
    assert read.jwt_secret_arn == (_DEPLOYED["JwtSecret"] if mode == "shared-secret" else "")
    assert read.jwt_algorithms == (("HS256",) if mode == "shared-secret" else ("RS256", "ES256"))
    assert (read.memories_table, read.minds_table) == (_DEPLOYED["MemoriesTable"], _DEPLOYED["MindsTable"])
    limits = settings.get_limits()
    assert (limits.max_minds_per_user, limits.mind_rate_limit, limits.hook_rate_limit) == (100, 600, 120)
