"""Where the CLI and the MCP server find their URL and credential: command-line flags first, then
the environment (`SYNAPSE_URL`, `SYNAPSE_MIND_KEY`, `SYNAPSE_TOKEN`, `SYNAPSE_MIND_ID`), then a
profile of `~/.config/synapse/config.toml` (`SYNAPSE_CONFIG` names another file):

    [default]
    url = "https://abc123.execute-api.eu-central-1.amazonaws.com"
    mind_key = "mk_…"

    [work]                      # synapse --profile work …  (or SYNAPSE_PROFILE=work)
    url = "https://…"
    token = "eyJ…"
    mind_id = "m_…"

The credential is taken whole from the first of those places that has one (a Mind Key or a
token), so a token in the environment is never paired with a profile's Mind Key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse_client.errors import SynapseError

if TYPE_CHECKING:  # the clients are imported when one is made: reading settings needs no httpx
    from synapse_client.client import AsyncSynapse, Synapse

FIELDS = ("url", "mind_key", "token", "mind_id")


class ConfigError(SynapseError):
    """The configuration is missing something or cannot be read."""


@dataclass(frozen=True)
class Settings:
    url: str
    mind_key: str | None = None
    token: str | None = None
    mind_id: str | None = None

    def client(self, timeout: float | None = None) -> Synapse:
        """A blocking client (`timeout`: seconds, else the client's default)."""
        from synapse_client.client import DEFAULT_TIMEOUT, Synapse

        return Synapse(
            self.url,
            mind_key=self.mind_key,
            token=self.token,
            mind_id=self.mind_id,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        )

    def async_client(self) -> AsyncSynapse:
        from synapse_client.client import AsyncSynapse

        return AsyncSynapse(self.url, mind_key=self.mind_key, token=self.token, mind_id=self.mind_id)


def config_path(env: Mapping[str, str]) -> Path:
    if env.get("SYNAPSE_CONFIG"):
        return Path(env["SYNAPSE_CONFIG"])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "synapse" / "config.toml"


def read_profile(path: Path, name: str | None) -> dict[str, str]:
    """The profile's settings (`default` unless named); {} when the file is absent."""
    if not path.is_file():
        if name:
            raise ConfigError(f"Profile {name!r} asked for, but there is no config file at {path}.")
        return {}
    try:
        with path.open("rb") as source:
            data: dict[str, Any] = tomllib.load(source)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"Cannot read {path}: {error}") from error
    chosen = name or "default"
    profile = data.get(chosen)
    if profile is None:
        if name:
            raise ConfigError(f"No profile [{name}] in {path}.")
        return {}
    if not isinstance(profile, dict):
        raise ConfigError(f"[{chosen}] in {path} is not a table.")
    return {field: str(profile[field]) for field in FIELDS if profile.get(field)}


def resolve(
    flags: Mapping[str, str | None], env: Mapping[str, str] | None = None, profile: str | None = None
) -> Settings:
    """Settings from flags, then environment, then profile file (the credential as one unit)."""
    env = os.environ if env is None else env
    from_env = {field: env.get(f"SYNAPSE_{field.upper()}") for field in FIELDS}
    profile = profile or env.get("SYNAPSE_PROFILE") or None
    from_file = read_profile(config_path(env), profile)
    layers: list[Mapping[str, str | None]] = [flags, from_env, from_file]

    def first(field: str) -> str | None:
        return next((str(layer[field]) for layer in layers if layer.get(field)), None)

    url = first("url")
    if not url:
        raise ConfigError(
            "No Synapse URL: pass --url, set SYNAPSE_URL, or put url in ~/.config/synapse/config.toml."
        )
    holder = next((layer for layer in layers if layer.get("mind_key") or layer.get("token")), None)
    if holder is None:
        raise ConfigError(
            "No credential: pass --mind-key (an agent) or --token (a person's JWT), "
            "or set SYNAPSE_MIND_KEY / SYNAPSE_TOKEN, or add one to the config file."
        )
    mind_key, token = holder.get("mind_key") or None, holder.get("token") or None
    if mind_key and token:
        raise ConfigError("Both a Mind Key and a token are set in one place; keep one.")
    return Settings(url, mind_key, token, first("mind_id"))
