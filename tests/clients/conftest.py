"""Fixtures of the client tests: a real `make run` (one per test module), and a fresh mind per test
with a client for its agent (Mind Key) and for its person (JWT + X-Mind-Id)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from synapse_client import Synapse

from tests.support.runner import ROOT, RunningService, running

STARTUP = 120.0  # seconds for a runner to come up on a busy machine
SYNAPSE_CLI = Path(sys.executable).parent / "synapse"


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    loopback = {"SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK": "true"}
    with running(tmp_path_factory, "client-runner", loopback, timeout=STARTUP) as service:
        yield service


@dataclass
class MindClients:
    id: str
    key: str
    agent: Synapse
    person: Synapse


def new_mind(runner: RunningService, name: str = "Client test") -> MindClients:
    with Synapse(runner.url, token=runner.jwt) as owner:
        made = owner.create_mind(name)
    assert made.mind_key.key is not None
    return MindClients(
        made.mind.id,
        made.mind_key.key,
        Synapse(runner.url, mind_key=made.mind_key.key),
        Synapse(runner.url, token=runner.jwt, mind_id=made.mind.id),
    )


@pytest.fixture
def mind(runner: RunningService) -> Iterator[MindClients]:
    clients = new_mind(runner)
    yield clients
    clients.agent.close()
    clients.person.close()


def run_cli(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it (no profile file unless `env` names one)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_")}
    clean.setdefault("SYNAPSE_CONFIG", str(ROOT / ".no-synapse-config.toml"))
    return subprocess.run(  # noqa: S603 — our own console script
        [str(SYNAPSE_CLI), *args],
        env=clean | env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
