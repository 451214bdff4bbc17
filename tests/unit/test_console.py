"""The console function's answers without a browser: what config.json says per environment, that
the dev sign-in exists only where the local runner enables it, which paths are files, and that
the buttons it offers per role follow the API's role table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from synapse.api import console, routes
from synapse.core.errors import NotFound

from infra.gateway import LambdaContext, load_handler
from infra.local_runner import banner
from tests.support import events
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

STATIC = Path(__file__).resolve().parents[2] / "functions" / "console" / "static"


CONSOLE_ENV = (
    *("SYNAPSE_AUTH_MODE", "SYNAPSE_JWT_CLIENT_ID", "SYNAPSE_ALLOW_DEV_SECRETS", "SYNAPSE_JWKS_URL"),
    *("SYNAPSE_CONSOLE_COGNITO_DOMAIN", "SYNAPSE_CONSOLE_DEV_TOKEN", "SYNAPSE_JWT_CLIENT_ID_PARAMETER"),
)


@pytest.fixture(autouse=True)
def _plain_environment(configure: Configure) -> None:
    configure(**dict.fromkeys(CONSOLE_ENV))


def test_a_cognito_stack_signs_in_through_its_hosted_ui(configure: Configure) -> None:
    # Given the environment the template gives the console in cognito mode
    configure(
        SYNAPSE_AUTH_MODE="cognito",
        SYNAPSE_JWT_ISSUER="https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_ab12",
        SYNAPSE_JWT_CLIENT_ID="client123",
        SYNAPSE_CONSOLE_COGNITO_DOMAIN="https://synapse-ab12.auth.eu-west-1.amazoncognito.com",
    )
    # Then config.json names the hosted UI and the client, offers no dev sign-in,
    # and the CSP lets the page post the code to that domain alone
    assert console.config() == {
        "auth_mode": "cognito",
        "cognito": {
            "domain": "https://synapse-ab12.auth.eu-west-1.amazoncognito.com",
            "client_id": "client123",
        },
        "dev_signin": False,
    }
    assert "connect-src 'self' https://synapse-ab12.auth.eu-west-1.amazoncognito.com;" in (
        console.content_security_policy()
    )


def test_the_dev_token_is_handed_out_only_where_dev_secrets_are_allowed(configure: Configure) -> None:
    # Given a token in the environment but no dev secrets (as on AWS)
    configure(SYNAPSE_CONSOLE_DEV_TOKEN="a.jwt.token")
    # Then there is no dev sign-in
    assert console.dev_token() == "" and console.config()["dev_signin"] is False
    # When the local runner's SYNAPSE_ALLOW_DEV_SECRETS is set too
    configure(SYNAPSE_ALLOW_DEV_SECRETS="true")
    # Then the page may fetch it
    assert console.dev_token() == "a.jwt.token" and console.config()["dev_signin"] is True


def test_a_domain_that_is_not_an_https_origin_is_ignored(configure: Configure) -> None:
    configure(SYNAPSE_CONSOLE_COGNITO_DOMAIN="http://evil.example/path")
    assert console.cognito_domain() == ""
    assert "connect-src 'self';" in console.content_security_policy()


NOT_FILES = ["../app.py", "views/../../app.py", ".hidden", "", "a//b.js", "x.py", "nope.js"]
NOT_FILES += ["a\x00.js", "a" * 300, "café.js"]  # nothing outside the names the folder uses


@pytest.mark.parametrize("name", NOT_FILES)
def test_only_files_of_the_static_folder_are_served(name: str) -> None:
    with pytest.raises(NotFound):
        console.static_file(STATIC, name)


def test_the_sample_events_are_answered_with_the_page_a_script_and_the_config() -> None:
    handler = load_handler(STATIC.parent, "app.handler")
    page = handler(events.load("console_page"), LambdaContext("console"))
    script = handler(events.load("console"), LambdaContext("console"))
    assert page["statusCode"] == 200 and page["headers"]["Content-Type"].startswith("text/html")
    assert '<script type="module" src="/console/app.js">' in page["body"]
    assert script["statusCode"] == 200 and script["headers"]["Content-Type"].startswith("text/javascript")
    asked = {**events.load("console"), "pathParameters": {"proxy": "config.json"}}
    assert json.loads(handler(asked, LambdaContext("console"))["body"])["auth_mode"] == "shared-secret"


def test_the_runner_banner_points_at_the_console(configure: Configure) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=None)
    assert "Console: http://127.0.0.1:3000/console" in banner("http://127.0.0.1:3000", "a.jwt", "moto")


# What each console action of roles.js stands for: the routes that do it (api.routes.ROUTE_ROLES).
CONSOLE_ACTIONS = {
    "read": ("GET /memory", "GET /memory/{id}/history", "GET /proposals", "GET /minds/{mind_id}/members"),
    "write": ("POST /memory", "PUT /memory/{id}"),
    "delete": ("DELETE /memory/{id}",),
    "verify": ("POST /memory/{id}/verify",),
    "decide": ("POST /proposals/{id}/accept", "POST /proposals/{id}/reject"),
    "restore": ("POST /memory/{id}/restore",),
    "manage": ("PATCH /minds/{mind_id}", "POST /minds/{mind_id}/keys", "POST /minds/{mind_id}/invitations"),
}


def test_the_consoles_role_table_is_the_apis() -> None:
    # Given the least role roles.js says each console action needs
    source = (STATIC / "roles.js").read_text()
    table = re.search(r"const NEEDS = \{(.*?)\};", source, re.S)
    assert table is not None
    needs = dict(re.findall(r"(\w+): \"(\w+)\"", table[1]))
    # Then it names every action, and each is the role the API asks of the routes that do it
    assert needs.keys() == CONSOLE_ACTIONS.keys()
    for action, route_keys in CONSOLE_ACTIONS.items():
        assert {routes.ROUTE_ROLES[key] for key in route_keys} == {needs[action]}, action
