"""Changing the service's configuration inside one test.

Settings are read once per process (`get_settings` is cached), so a test that needs other JWT
settings patches the environment and clears the caches (settings, the app client id read from SSM,
JWKS clients, and powertools' secret cache with its Secrets Manager client), and the fixture clears
them again after.
Use it with `from tests.support.settings import configure_fixture as configure_fixture`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from aws_lambda_powertools.utilities import parameters
from synapse.auth import tokens
from synapse.core.settings import Settings, get_settings, read_parameter

Configure = Callable[..., Settings]


def _forget() -> None:
    get_settings.cache_clear()
    read_parameter.cache_clear()
    tokens._jwks_client.cache_clear()
    parameters.clear_caches()  # also drops the provider, whose boto3 client may belong to another moto


@pytest.fixture(name="configure")
def configure_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Configure]:
    """configure(SYNAPSE_JWT_ISSUER="https://idp", SYNAPSE_JWKS_URL=None) → fresh Settings."""

    def apply(**env: str | None) -> Settings:
        for name, value in env.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        _forget()
        return get_settings()

    yield apply
    _forget()  # monkeypatch restores the environment afterwards; the next read sees it
