"""Read `template.yaml` so the local runner and the tests use its routes and tables, never a copy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
    """SafeLoader that reads CloudFormation short-form tags (!Ref, !GetAtt, !Sub…) as plain dicts."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


@cache
def load() -> dict[str, Any]:
    document: dict[str, Any] = yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    return document


def resources(kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in load()["Resources"].items() if r["Type"] == kind}


# ---------------------------------------------------------------- tables


def table_definitions() -> dict[str, dict[str, Any]]:
    """CreateTable arguments for every AWS::DynamoDB::Table, keyed by logical id."""
    definitions = {}
    for name, resource in resources("AWS::DynamoDB::Table").items():
        props = resource["Properties"]
        definition: dict[str, Any] = {
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):
            definition["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        if props.get("StreamSpecification"):
            definition["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
        definitions[name] = definition
    return definitions


def create_tables(client: Any, names: dict[str, str]) -> None:
    """Create each template table under the physical name `names[logical id]` (skips existing ones)."""
    existing = set(client.list_tables()["TableNames"])
    for logical, definition in table_definitions().items():
        if names[logical] not in existing:
            client.create_table(TableName=names[logical], **definition)


# ---------------------------------------------------------------- routes


DEFAULT_ROUTE_KEY = "$default"


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    code_dir: Path
    handler: str
    authorized: bool

    @property
    def is_default(self) -> bool:
        return self.path == DEFAULT_ROUTE_KEY

    @property
    def route_key(self) -> str:
        return DEFAULT_ROUTE_KEY if self.is_default else f"{self.method} {self.path}"

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        # A greedy `{name+}` (API Gateway's proxy parameter) takes the rest of the path, slashes too.
        regex = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", regex)
        return re.compile(f"^{regex}$")

    @property
    def specificity(self) -> tuple[int, int]:
        """API Gateway prefers literal segments over {params}; sort keys for matching order."""
        return (self.path.count("{"), -len(self.path))


def handler_of(resource: dict[str, Any]) -> str:
    props = resource["Properties"]
    return str(
        props.get("Handler") or load().get("Globals", {}).get("Function", {}).get("Handler", "app.handler")
    )


def authorizer_function() -> tuple[Path, str]:
    api = next(iter(resources("AWS::Serverless::HttpApi").values()))
    auth = api["Properties"]["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]
    logical = authorizer["FunctionArn"]["Fn::GetAtt"][0]
    function = load()["Resources"][logical]
    return ROOT / function["Properties"]["CodeUri"], handler_of(function)


def _all_routes() -> list[Route]:
    """Every HttpApi event; one without Path and Method is SAM's way to declare the `$default` route."""
    found = []
    for name, resource in resources("AWS::Serverless::Function").items():
        for event in (resource["Properties"].get("Events") or {}).values():
            if event["Type"] != "HttpApi":
                continue
            props = event["Properties"]
            authorizer = (props.get("Auth") or {}).get("Authorizer")
            found.append(
                Route(
                    method=str(props.get("Method", "ANY")).upper(),
                    path=props.get("Path", DEFAULT_ROUTE_KEY),
                    function=name,
                    code_dir=ROOT / resource["Properties"]["CodeUri"],
                    handler=handler_of(resource),
                    authorized=authorizer != "NONE",
                )
            )
    return found


def routes() -> list[Route]:
    """The routes with a method and path, in API Gateway's matching order (not `$default`)."""
    return sorted((r for r in _all_routes() if not r.is_default), key=lambda r: r.specificity)


def default_route() -> Route | None:
    """The `$default` route: API Gateway sends it every request no other route matches."""
    return next((r for r in _all_routes() if r.is_default), None)
