"""One typed settings object, read from the environment once per cold start.

Secrets come from env vars locally and from AWS Secrets Manager in AWS (the `*_SECRET_ARN` variables
name a secret whose SecretString is the value). They are read on use through powertools parameters,
whose cache keeps a value for `SYNAPSE_SECRETS_MAX_AGE` seconds: a function that never needs a secret
never calls Secrets Manager, and a rotated secret is picked up within that time, without a cold start.

Cognito's app client id comes from `SYNAPSE_JWT_CLIENT_ID` locally and, in AWS, from the SSM parameter
`SYNAPSE_JWT_CLIENT_ID_PARAMETER` names (the template cannot hand the id itself to the functions without
a dependency cycle: docs/console.md#signing-in). It is read on the first use and kept for the
container's life: it changes only when the client is replaced.
"""

import os
from functools import cache

from synapse.core.records import Record

DEV_JWT_SECRET = "synapse-local-dev-secret-change-me-0123456789"  # noqa: S105 - local runs only
DEV_KEY_PEPPER = "synapse-local-dev-pepper-change-me-0123456789"
FORBIDDEN_ALGORITHMS = frozenset({"none", ""})
AUTH_MODES = ("cognito", "oidc", "shared-secret")
SECRETS_MAX_AGE_DEFAULT = 300
# Minds an indexer invocation writes at once (threads: each mostly waits on EFS round trips).
INDEX_WRITERS_DEFAULT = 16
INDEX_CACHE_MB_DEFAULT = 160


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def read_secret(arn: str, max_age: int) -> str:
    """A Secrets Manager secret's value, from powertools' cache while younger than max_age seconds."""
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_secret(arn, max_age=max_age)
    return value.decode() if isinstance(value, bytes) else str(value)


@cache
def read_parameter(name: str) -> str:
    """An SSM parameter's value, read once per container (a failed read is not kept: tried again next use)."""
    import boto3

    found = boto3.client("ssm").get_parameter(Name=name)["Parameter"]["Value"]
    return str(found)


class Settings(Record):
    """A `Record`, not a dataclass or a NamedTuple: building a dataclass compiles its methods at import
    (~1.5 ms of every cold start for this one, issue 14), a NamedTuple of 25 fields compiles its
    constructor and makes a property per field (~0.5 ms, issue 35)."""

    memories_table: str
    minds_table: str
    dynamodb_endpoint: str | None
    region: str
    jwt_secret_value: str
    jwt_secret_arn: str
    jwks_url: str
    jwt_algorithms: tuple[str, ...]
    jwt_issuer: str | None
    jwt_audience: str | None
    key_pepper_value: str
    key_pepper_arn: str
    data_dir: str
    allow_dev_secrets: bool = False
    # Who signs people's JWTs (AUTH_MODES): a Cognito pool (its app client id checked), any OIDC
    # provider (JWKS, issuer, audience), or this deployment's own HS256 secret.
    auth_mode: str = "shared-secret"
    # The app client id (SYNAPSE_JWT_CLIENT_ID), or the SSM parameter holding it: `jwt_client_id`.
    jwt_client_id_value: str | None = None
    jwt_client_id_parameter: str = ""
    secrets_max_age: int = SECRETS_MAX_AGE_DEFAULT
    # Where the per-mind FTS5 snapshots live: EFS (/mnt/index) in AWS, a local folder otherwise.
    index_dir: str = ""
    index_writers: int = INDEX_WRITERS_DEFAULT
    # What a container keeps of the indexes it read (their vector matrices), in bytes per thread:
    # `index.readers`. 160 MiB holds a 100,000-memory mind's float32 matrix (147 MiB) or ten of 10,000.
    index_cache_bytes: int = INDEX_CACHE_MB_DEFAULT * 2**20
    # Outbound webhooks: the delivery queue and its dead-letter queue (SQS URLs; empty locally, where
    # the runner's in-process queue stands in), and the loopback opt-in for local runs and tests only.
    webhook_queue_url: str = ""
    webhook_dead_letter_url: str = ""
    webhooks_allow_loopback: bool = False
    # The function that purges a deleted mind's memories in the background (DELETE /minds answers
    # at once): its name in AWS; empty in-process, where the runner's stand-in or the request does it.
    purge_function: str = ""
    # The review console: the Cognito hosted UI's origin (template, cognito mode) and make run's dev JWT,
    # which the console hands out only where dev secrets are allowed (never on AWS).
    console_cognito_domain: str = ""
    console_dev_token: str = ""

    # Properties, not cached on this process-wide object: each read goes through powertools' cache,
    # which expires after secrets_max_age, so a rotation is seen without recycling containers.
    @property
    def jwt_secret(self) -> str:
        if self.jwt_secret_value:
            return self.jwt_secret_value
        if self.jwt_secret_arn:
            return read_secret(self.jwt_secret_arn, self.secrets_max_age)
        return DEV_JWT_SECRET if self.allow_dev_secrets else ""

    @property
    def key_pepper(self) -> bytes:
        if self.key_pepper_value:
            return self.key_pepper_value.encode()
        if self.key_pepper_arn:
            return read_secret(self.key_pepper_arn, self.secrets_max_age).encode()
        if self.allow_dev_secrets:
            return DEV_KEY_PEPPER.encode()
        raise RuntimeError("SYNAPSE_KEY_PEPPER or SYNAPSE_KEY_PEPPER_SECRET_ARN must be set")

    @property
    def jwt_client_id(self) -> str | None:
        """The Cognito app client people's tokens must be issued to; SSM is asked only on first use,
        so a function that never checks a Cognito token never calls it."""
        if self.jwt_client_id_value:
            return self.jwt_client_id_value
        if self.jwt_client_id_parameter:
            return read_parameter(self.jwt_client_id_parameter)
        return None


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


def _auth_mode() -> str:
    mode = _env("SYNAPSE_AUTH_MODE").lower() or ("oidc" if _env("SYNAPSE_JWKS_URL") else "shared-secret")
    if mode not in AUTH_MODES:
        raise RuntimeError(f"SYNAPSE_AUTH_MODE must be one of {', '.join(AUTH_MODES)}, not {mode!r}")
    return mode


def _jwks_url(mode: str, issuer: str) -> str:
    """Where the signing keys are: none with a shared secret; a Cognito pool publishes them under its
    issuer, so naming the issuer is enough there."""
    if mode == "shared-secret":
        return ""
    url = _env("SYNAPSE_JWKS_URL") or (f"{issuer.rstrip('/')}/.well-known/jwks.json" if issuer else "")
    if not url:
        raise RuntimeError(f"SYNAPSE_AUTH_MODE={mode} needs SYNAPSE_JWKS_URL or SYNAPSE_JWT_ISSUER")
    return url


def _client_id(mode: str) -> tuple[str | None, str]:
    """The app client id, or the name of the SSM parameter holding it (either will do in cognito mode)."""
    client_id, parameter = _env("SYNAPSE_JWT_CLIENT_ID") or None, _env("SYNAPSE_JWT_CLIENT_ID_PARAMETER")
    if mode == "cognito" and (not (client_id or parameter) or not _env("SYNAPSE_JWT_ISSUER")):
        raise RuntimeError(
            "SYNAPSE_AUTH_MODE=cognito needs SYNAPSE_JWT_ISSUER and SYNAPSE_JWT_CLIENT_ID"
            " (or SYNAPSE_JWT_CLIENT_ID_PARAMETER, an SSM parameter holding it)"
        )
    return client_id, parameter


@cache
def get_settings() -> Settings:
    auth_mode = _auth_mode()
    client_id, client_id_parameter = _client_id(auth_mode)
    jwks_url = _jwks_url(auth_mode, _env("SYNAPSE_JWT_ISSUER"))
    return Settings(
        memories_table=_env("SYNAPSE_MEMORIES_TABLE", "synapse-memories"),
        minds_table=_env("SYNAPSE_MINDS_TABLE", "synapse-minds"),
        dynamodb_endpoint=_env("SYNAPSE_DYNAMODB_ENDPOINT") or None,
        region=_env("AWS_REGION") or _env("AWS_DEFAULT_REGION") or "us-east-1",
        jwt_secret_value=_env("SYNAPSE_JWT_SECRET"),
        jwt_secret_arn=_env("SYNAPSE_JWT_SECRET_ARN"),
        jwks_url=jwks_url,
        jwt_algorithms=_algorithms(_env("SYNAPSE_JWT_ALGORITHMS"), using_jwks=bool(jwks_url)),
        jwt_issuer=_env("SYNAPSE_JWT_ISSUER") or None,
        # Cognito's access tokens carry no aud: the app client id is checked instead (jwt_client_id).
        jwt_audience=(_env("SYNAPSE_JWT_AUDIENCE") or None) if auth_mode != "cognito" else None,
        key_pepper_value=_env("SYNAPSE_KEY_PEPPER"),
        key_pepper_arn=_env("SYNAPSE_KEY_PEPPER_SECRET_ARN"),
        data_dir=_env("SYNAPSE_DATA_DIR", ".synapse"),
        allow_dev_secrets=_env("SYNAPSE_ALLOW_DEV_SECRETS").lower() in {"1", "true", "yes"},
        auth_mode=auth_mode,
        jwt_client_id_value=client_id,
        jwt_client_id_parameter=client_id_parameter,
        secrets_max_age=int(_env("SYNAPSE_SECRETS_MAX_AGE") or SECRETS_MAX_AGE_DEFAULT),
        index_dir=_env("SYNAPSE_INDEX_DIR") or os.path.join(_env("SYNAPSE_DATA_DIR", ".synapse"), "index"),
        index_writers=max(1, int(_env("SYNAPSE_INDEX_WRITERS") or INDEX_WRITERS_DEFAULT)),
        index_cache_bytes=max(1, int(_env("SYNAPSE_INDEX_CACHE_MB") or INDEX_CACHE_MB_DEFAULT)) * 2**20,
        webhook_queue_url=_env("SYNAPSE_WEBHOOK_QUEUE_URL"),
        webhook_dead_letter_url=_env("SYNAPSE_WEBHOOK_DEAD_LETTER_URL"),
        webhooks_allow_loopback=_env("SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK").lower() in {"1", "true", "yes"},
        purge_function=_env("SYNAPSE_PURGE_FUNCTION"),
        console_cognito_domain=_env("SYNAPSE_CONSOLE_COGNITO_DOMAIN"),
        console_dev_token=_env("SYNAPSE_CONSOLE_DEV_TOKEN"),
    )


# ---------------------------------------------------------------- limits
# Read on every call (three environment lookups), so a test or a local run can change them at will.


class Limits(Record):
    """How much one user may hold and one client may send. A rate of 0 is off (the local default)."""

    max_minds_per_user: int = 100  # SYNAPSE_MAX_MINDS_PER_USER
    mind_rate_limit: int = 0  # SYNAPSE_MIND_RATE_LIMIT: memory requests per minute per mind
    hook_rate_limit: int = 0  # SYNAPSE_HOOK_RATE_LIMIT: deliveries per minute per inbound hook
    max_members_per_mind: int = 50  # SYNAPSE_MAX_MEMBERS_PER_MIND
    max_pending_invitations: int = 20  # SYNAPSE_MAX_PENDING_INVITATIONS: per mind


def _whole_number_env(name: str, default: int) -> int:
    raw = _env(name)
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()):
        raise RuntimeError(f"{name} must be a whole number (0 or more), not {raw[:40]!r}")
    return int(raw)


def get_limits() -> Limits:
    return Limits(
        max_minds_per_user=_whole_number_env("SYNAPSE_MAX_MINDS_PER_USER", 100),
        mind_rate_limit=_whole_number_env("SYNAPSE_MIND_RATE_LIMIT", 0),
        hook_rate_limit=_whole_number_env("SYNAPSE_HOOK_RATE_LIMIT", 0),
        max_members_per_mind=_whole_number_env("SYNAPSE_MAX_MEMBERS_PER_MIND", 50),
        max_pending_invitations=_whole_number_env("SYNAPSE_MAX_PENDING_INVITATIONS", 20),
    )
