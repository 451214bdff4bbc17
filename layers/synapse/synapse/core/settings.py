"""One typed settings object, read from the environment once per cold start.

Secrets come from env vars locally and from SSM Parameter Store in AWS (the
`*_PARAM` variables name a SecureString); they are fetched lazily, so a function
that never needs a secret never pays for the call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache, cached_property

DEV_JWT_SECRET = "synapse-local-dev-secret-change-me-0123456789"  # noqa: S105 - local runs only
DEV_KEY_PEPPER = "synapse-local-dev-pepper-change-me-0123456789"
FORBIDDEN_ALGORITHMS = frozenset({"none", ""})


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _ssm_secret(parameter_name: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_parameter(parameter_name, decrypt=True, max_age=300)
    return str(value)


@dataclass(frozen=True)
class Settings:
    memories_table: str
    minds_table: str
    dynamodb_endpoint: str | None
    region: str
    jwt_secret_value: str
    jwt_secret_param: str
    jwks_url: str
    jwt_algorithms: tuple[str, ...]
    jwt_issuer: str | None
    jwt_audience: str | None
    key_pepper_value: str
    key_pepper_param: str
    data_dir: str
    allow_dev_secrets: bool = field(default=False)
    # Where the per-mind FTS5 snapshots live: EFS (/mnt/index) in AWS, a local folder otherwise.
    index_dir: str = field(default="")
    # Outbound webhooks: the delivery queue and its dead-letter queue (SQS URLs; empty locally, where
    # the runner's in-process queue stands in), and the loopback opt-in for local runs and tests only.
    webhook_queue_url: str = field(default="")
    webhook_dead_letter_url: str = field(default="")
    webhooks_allow_loopback: bool = field(default=False)

    @cached_property
    def jwt_secret(self) -> str:
        if self.jwt_secret_value:
            return self.jwt_secret_value
        if self.jwt_secret_param:
            return _ssm_secret(self.jwt_secret_param)
        return DEV_JWT_SECRET if self.allow_dev_secrets else ""

    @cached_property
    def key_pepper(self) -> bytes:
        if self.key_pepper_value:
            return self.key_pepper_value.encode()
        if self.key_pepper_param:
            return _ssm_secret(self.key_pepper_param).encode()
        if self.allow_dev_secrets:
            return DEV_KEY_PEPPER.encode()
        raise RuntimeError("SYNAPSE_KEY_PEPPER or SYNAPSE_KEY_PEPPER_PARAM must be set")


def _algorithms(raw: str, using_jwks: bool) -> tuple[str, ...]:
    default = "RS256,ES256" if using_jwks else "HS256"
    names = [a.strip() for a in (raw or default).split(",")]
    allowed = tuple(a for a in names if a.lower() not in FORBIDDEN_ALGORITHMS)
    if using_jwks:
        # A JWKS holds public keys: accepting HS* there would let anyone sign with the public key.
        allowed = tuple(a for a in allowed if not a.upper().startswith("HS"))
    if not allowed:
        raise RuntimeError("SYNAPSE_JWT_ALGORITHMS leaves no acceptable algorithm")
    return allowed


@cache
def get_settings() -> Settings:
    jwks_url = _env("SYNAPSE_JWKS_URL")
    return Settings(
        memories_table=_env("SYNAPSE_MEMORIES_TABLE", "synapse-memories"),
        minds_table=_env("SYNAPSE_MINDS_TABLE", "synapse-minds"),
        dynamodb_endpoint=_env("SYNAPSE_DYNAMODB_ENDPOINT") or None,
        region=_env("AWS_REGION") or _env("AWS_DEFAULT_REGION") or "us-east-1",
        jwt_secret_value=_env("SYNAPSE_JWT_SECRET"),
        jwt_secret_param=_env("SYNAPSE_JWT_SECRET_PARAM"),
        jwks_url=jwks_url,
        jwt_algorithms=_algorithms(_env("SYNAPSE_JWT_ALGORITHMS"), using_jwks=bool(jwks_url)),
        jwt_issuer=_env("SYNAPSE_JWT_ISSUER") or None,
        jwt_audience=_env("SYNAPSE_JWT_AUDIENCE") or None,
        key_pepper_value=_env("SYNAPSE_KEY_PEPPER"),
        key_pepper_param=_env("SYNAPSE_KEY_PEPPER_PARAM"),
        data_dir=_env("SYNAPSE_DATA_DIR", ".synapse"),
        allow_dev_secrets=_env("SYNAPSE_ALLOW_DEV_SECRETS").lower() in {"1", "true", "yes"},
        index_dir=_env("SYNAPSE_INDEX_DIR") or os.path.join(_env("SYNAPSE_DATA_DIR", ".synapse"), "index"),
        webhook_queue_url=_env("SYNAPSE_WEBHOOK_QUEUE_URL"),
        webhook_dead_letter_url=_env("SYNAPSE_WEBHOOK_DEAD_LETTER_URL"),
        webhooks_allow_loopback=_env("SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK").lower() in {"1", "true", "yes"},
    )
