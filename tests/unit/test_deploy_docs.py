"""docs/deploy.md, followed literally, runs what the Makefile runs: the sam commands it shows under
`make deploy`, `make teardown` and `make smoke` are exactly what `make -n` prints, and samconfig.toml
has the environments those commands name. No AWS, no SAM CLI: `make -n` only prints."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy.md"
SAMCONFIG = ROOT / "samconfig.toml"


def _make_prints(*args: str) -> list[str]:
    """The recipe lines `make -n` prints, with this checkout's path written as the docs write it."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    done = subprocess.run(  # noqa: S603 - fixed argv: make -n with our own targets
        [make, "-n", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True, check=True
    )
    lines = [line.replace(str(ROOT), "$PWD") for line in done.stdout.splitlines()]
    # The venv is (re)built first when requirements changed; that is not part of the documented path.
    return [
        line
        for line in lines
        if not line.startswith("echo ") and (".venv/bin/sam" in line or "infra.smoke" in line)
    ]


def _shown(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines()}


@pytest.mark.parametrize(
    ("args", "config_env"),
    [
        (("deploy", "ENV=dev"), "default"),
        (("deploy", "ENV=prod"), "prod"),
        (("teardown", "ENV=dev"), "default"),
    ],
)
def test_deploy_docs_show_the_commands_make_runs(args: tuple[str, ...], config_env: str) -> None:
    # Given what make would run for the target
    commands = _make_prints(*args)
    assert commands, f"make -n {' '.join(args)} printed no sam command"
    # Then each command uses the environment's samconfig section, and the dev ones appear verbatim in the docs
    assert all(f"--config-env {config_env}" in command for command in commands), commands
    if config_env == "default":
        missing = [command for command in commands if command not in _shown(DEPLOY.read_text())]
        assert not missing, f"docs/deploy.md does not show what make runs: {missing}"


def test_make_smoke_runs_the_smoke_module_with_the_token_in_the_environment() -> None:
    (command,) = _make_prints("smoke", "URL=https://api.example.com", "TOKEN=a.b.c")
    assert command == 'TOKEN="a.b.c" .venv/bin/python -m infra.smoke "https://api.example.com"'
    assert "TOKEN=… .venv/bin/python -m infra.smoke https://…" in DEPLOY.read_text()


def test_samconfig_has_the_dev_and_prod_environments_the_docs_name() -> None:
    # Given the committed samconfig.toml
    config = tomllib.loads(SAMCONFIG.read_text())
    for env, stack in (("default", "synapse-dev"), ("prod", "synapse-prod")):
        # Then each environment names its stack and region and deploys with tags and an S3 bucket SAM manages
        assert config[env]["global"]["parameters"]["stack_name"] == stack
        region = config[env]["global"]["parameters"].get("region")
        if env == "prod":
            assert re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", region or "")
        else:  # dev deploys to AWS_DEFAULT_REGION (make's default: us-east-1)
            assert region is None
        deploy = config[env]["deploy"]["parameters"]
        assert deploy["capabilities"] == "CAPABILITY_IAM"
        assert deploy["resolve_s3"] is True
        label = "dev" if env == "default" else env
        assert deploy["tags"] == f'project="synapse" environment="{label}"'
        assert stack in DEPLOY.read_text()
    # And prod asks before changing anything
    assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True
    assert "samconfig.toml" not in (ROOT / ".gitignore").read_text()
