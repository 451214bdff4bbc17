"""Secrets from Secrets Manager are re-read after SYNAPSE_SECRETS_MAX_AGE, so a rotation needs no cold start.

moto plays Secrets Manager; powertools' own cache decides when to read again, and its clock is the one
thing moved here (no test waits for wall-clock time).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.parameters import base as powertools_cache
from cryptography.exceptions import InvalidTag
from moto import mock_aws
from synapse.auth import tokens
from synapse.core.errors import BadRequest, Unauthorized
from synapse.minds import keys
from synapse.storage import cursor
from synapse.webhooks import sealed

from tests.support.api import jwt_for
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

OLD_PEPPER = "pepper-before-rotation-0123456789abcdef"
NEW_PEPPER = "pepper-after-rotation-0123456789abcdef"
OLD_JWT_SECRET = "jwt-secret-before-rotation-0123456789abcdef"
NEW_JWT_SECRET = "jwt-secret-after-rotation-0123456789abcdef"


class CacheClock:
    """Stands in for powertools' `datetime` (its cache stamps and checks expiry with `datetime.now()`)."""

    start = datetime(2026, 3, 1, 12, 0, 0)
    offset = timedelta()

    @classmethod
    def now(cls, tz: Any = None) -> datetime:
        return cls.start + cls.offset

    @classmethod
    def advance(cls, seconds: int) -> None:
        cls.offset += timedelta(seconds=seconds)


@pytest.fixture
def cache_clock(monkeypatch: pytest.MonkeyPatch) -> type[CacheClock]:
    CacheClock.offset = timedelta()
    monkeypatch.setattr(powertools_cache, "datetime", CacheClock)
    return CacheClock


@pytest.fixture
def secretsmanager() -> Iterator[Any]:
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        yield boto3.client("secretsmanager", region_name="us-east-1")


def secret(client: Any, name: str, value: str) -> str:
    arn: str = client.create_secret(Name=name, SecretString=value)["ARN"]
    return arn


def rotate(client: Any, arn: str, value: str) -> None:
    client.put_secret_value(SecretId=arn, SecretString=value)


@pytest.fixture
def pepper_arn(secretsmanager: Any, configure: Configure) -> str:
    arn = secret(secretsmanager, "synapse/key-pepper", OLD_PEPPER)
    configure(SYNAPSE_KEY_PEPPER=None, SYNAPSE_KEY_PEPPER_SECRET_ARN=arn, SYNAPSE_SECRETS_MAX_AGE=None)
    return arn


# ---------------------------------------------------------------- refresh after max_age


def test_a_rotated_pepper_is_used_after_max_age_and_not_before(
    secretsmanager: Any, pepper_arn: str, configure: Configure, cache_clock: type[CacheClock]
) -> None:
    # Given a pepper read from Secrets Manager under the default max_age (300 s)
    settings = configure()
    assert settings.secrets_max_age == 300
    assert settings.key_pepper == OLD_PEPPER.encode()
    # When it is rotated
    rotate(secretsmanager, pepper_arn, NEW_PEPPER)
    # Then the cached value serves until max_age has passed
    cache_clock.advance(299)
    assert settings.key_pepper == OLD_PEPPER.encode()
    # And the new one right after, with no new Settings (no cold start)
    cache_clock.advance(2)
    assert settings.key_pepper == NEW_PEPPER.encode()


def test_max_age_comes_from_synapse_secrets_max_age(
    secretsmanager: Any, pepper_arn: str, configure: Configure, cache_clock: type[CacheClock]
) -> None:
    settings = configure(SYNAPSE_SECRETS_MAX_AGE="60")
    assert settings.key_pepper == OLD_PEPPER.encode()
    rotate(secretsmanager, pepper_arn, NEW_PEPPER)
    cache_clock.advance(59)
    assert settings.key_pepper == OLD_PEPPER.encode()
    cache_clock.advance(2)
    assert settings.key_pepper == NEW_PEPPER.encode()


def test_a_rotated_jwt_secret_signs_accepted_tokens_after_max_age(
    secretsmanager: Any, configure: Configure, cache_clock: type[CacheClock]
) -> None:
    # Given a shared-secret deployment whose JWT secret is in Secrets Manager
    arn = secret(secretsmanager, "synapse/jwt-secret", OLD_JWT_SECRET)
    configure(SYNAPSE_AUTH_MODE="shared-secret", SYNAPSE_JWT_SECRET=None, SYNAPSE_JWT_SECRET_ARN=arn)
    old_token, new_token = jwt_for("alice", secret=OLD_JWT_SECRET), jwt_for("alice", secret=NEW_JWT_SECRET)
    assert tokens.decode_jwt(old_token)["sub"] == "alice"
    # When the secret is rotated
    rotate(secretsmanager, arn, NEW_JWT_SECRET)
    # Then until max_age the old secret still verifies, the new one not yet
    cache_clock.advance(299)
    assert tokens.decode_jwt(old_token)["sub"] == "alice"
    with pytest.raises(Unauthorized):
        tokens.decode_jwt(new_token)
    # And after it only tokens signed with the new secret pass
    cache_clock.advance(2)
    assert tokens.decode_jwt(new_token)["sub"] == "alice"
    with pytest.raises(Unauthorized):
        tokens.decode_jwt(old_token)


# ---------------------------------------------------------------- what wins, what fails


def test_a_value_variable_wins_without_calling_secrets_manager(configure: Configure) -> None:
    # Given both a value and an ARN, and no Secrets Manager at all (no moto: a call would fail)
    settings = configure(
        SYNAPSE_KEY_PEPPER="a-pepper-value-0123456789abcdef",
        SYNAPSE_KEY_PEPPER_SECRET_ARN="arn:aws:secretsmanager:us-east-1:123456789012:secret:nowhere",
        SYNAPSE_JWT_SECRET="a-jwt-secret-value-0123456789abcdef",
        SYNAPSE_JWT_SECRET_ARN="arn:aws:secretsmanager:us-east-1:123456789012:secret:nowhere-either",
    )
    # Then the values are used as they are
    assert settings.key_pepper == b"a-pepper-value-0123456789abcdef"
    assert settings.jwt_secret == "a-jwt-secret-value-0123456789abcdef"


def test_without_any_pepper_a_caller_fails_loudly(configure: Configure) -> None:
    settings = configure(
        SYNAPSE_KEY_PEPPER=None,
        SYNAPSE_KEY_PEPPER_SECRET_ARN=None,
        SYNAPSE_JWT_SECRET=None,
        SYNAPSE_JWT_SECRET_ARN=None,
        SYNAPSE_ALLOW_DEV_SECRETS=None,
    )
    with pytest.raises(RuntimeError, match="SYNAPSE_KEY_PEPPER_SECRET_ARN"):
        keys.hash_mind_key("mk_anything")
    assert settings.jwt_secret == ""


def test_dev_fallbacks_apply_only_when_allowed(configure: Configure) -> None:
    settings = configure(
        SYNAPSE_KEY_PEPPER=None,
        SYNAPSE_KEY_PEPPER_SECRET_ARN=None,
        SYNAPSE_JWT_SECRET=None,
        SYNAPSE_JWT_SECRET_ARN=None,
        SYNAPSE_ALLOW_DEV_SECRETS="true",
    )
    assert settings.key_pepper.startswith(b"synapse-local-dev-pepper")
    assert settings.jwt_secret.startswith("synapse-local-dev-secret")


# ---------------------------------------------------------------- every user of the pepper


def test_key_hashes_cursors_and_sealed_secrets_work_with_a_pepper_from_secrets_manager(
    secretsmanager: Any, pepper_arn: str
) -> None:
    # Mind Key hashing: the same key hashes the same under one pepper
    key = keys.new_mind_key()
    assert keys.hash_mind_key(key) == keys.hash_mind_key(key)
    # Cursor signing: a cursor made now decodes now
    token = cursor.encode("mind-1", "list", {"sk": "MEM#1", "o": 3})
    assert cursor.decode(token, "mind-1", "list") == {"sk": "MEM#1", "o": 3}
    # Webhook secret sealing: the key derived from the pepper opens what it sealed
    assert sealed.unseal(sealed.seal("whsec_1", "mind-1/wh-1"), "mind-1/wh-1") == "whsec_1"


def test_rotating_the_pepper_invalidates_key_hashes_cursors_and_sealed_secrets(
    secretsmanager: Any, pepper_arn: str, cache_clock: type[CacheClock]
) -> None:
    # Given a key hash, a cursor and a sealed webhook secret made under the old pepper
    key = keys.new_mind_key()
    old_hash = keys.hash_mind_key(key)
    token = cursor.encode("mind-1", "list", {"sk": "MEM#1", "o": 3})
    box = sealed.seal("whsec_1", "mind-1/wh-1")
    # When the pepper is rotated and the cache has expired
    rotate(secretsmanager, pepper_arn, NEW_PEPPER)
    cache_clock.advance(301)
    # Then none of them is recognised any more (docs/configuration.md says so: do not rotate it lightly)
    assert keys.hash_mind_key(key) != old_hash
    with pytest.raises(BadRequest):
        cursor.decode(token, "mind-1", "list")
    with pytest.raises(InvalidTag):
        sealed.unseal(box, "mind-1/wh-1")


def test_a_secret_binary_is_read_as_text(secretsmanager: Any, configure: Configure) -> None:
    arn = secretsmanager.create_secret(Name="synapse/binary", SecretBinary=b"binary-pepper-0123456789")["ARN"]
    settings = configure(SYNAPSE_KEY_PEPPER=None, SYNAPSE_KEY_PEPPER_SECRET_ARN=arn)
    assert settings.key_pepper == b"binary-pepper-0123456789"
