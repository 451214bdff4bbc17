"""`synapse mcp --http` serves with the Mind Key it holds, so it listens on loopback only unless the
person passes --allow-remote (issue 22, item 6). No runner: the refusal comes before any serving."""

from __future__ import annotations

from typing import Any

import pytest
from synapse_client import cli, mcp_server

from tests.clients.conftest import run_cli

KEY = ["--url", "http://127.0.0.1:9", "--mind-key", "mk_test"]
ANY = "0.0.0.0"  # noqa: S104 — every interface: what the command must refuse


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(mcp_server, "serve", lambda settings, **how: calls.append(how))
    return calls


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_a_loopback_host_is_served(host: str, served: list[dict[str, Any]]) -> None:
    # Given --http with a loopback --host
    # When the command runs
    assert cli.main([*KEY, "mcp", "--http", "8765", "--host", host]) == 0
    # Then it serves there, brackets of an IPv6 literal dropped
    assert served == [{"http_port": 8765, "host": host.strip("[]")}]


@pytest.mark.parametrize(
    "host",
    [ANY, "::", "192.168.1.20", "10.0.0.1", "example.com", "localhost.example", "127.0.0.1.nip.io"],
)
def test_a_non_loopback_host_is_refused_without_allow_remote(
    host: str, served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given --http with a --host other machines can reach, and no --allow-remote
    # When the command runs
    with pytest.raises(SystemExit) as exited:
        cli.main([*KEY, "mcp", "--http", "8765", "--host", host])
    # Then it is a usage error (exit 2) naming the host, why, and the flag; nothing is served
    assert exited.value.code == 2 and served == []
    error = capsys.readouterr().err
    assert f"--host {host} is not a loopback address" in error
    assert "Mind Key" in error and "--allow-remote" in error


def test_allow_remote_serves_there_and_warns(
    served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the person says so explicitly
    assert cli.main([*KEY, "mcp", "--http", "8765", "--host", ANY, "--allow-remote"]) == 0
    # Then it serves on that address, and says on stderr what that means
    assert served == [{"http_port": 8765, "host": ANY}]
    assert "anyone who reaches it acts with this Mind Key" in capsys.readouterr().err


def test_stdio_ignores_the_host(served: list[dict[str, Any]]) -> None:
    # stdio listens on nothing: --host has no effect without --http
    assert cli.main([*KEY, "mcp", "--host", ANY]) == 0
    assert served == [{"http_port": None, "host": ANY}]


def test_the_installed_command_refuses_too() -> None:
    # The console script a person runs, with the key in the environment as agents configure it
    done = run_cli(
        "mcp",
        "--http",
        "8765",
        "--host",
        ANY,
        env={"SYNAPSE_URL": "http://127.0.0.1:9", "SYNAPSE_MIND_KEY": "mk_test"},
    )
    assert done.returncode == 2 and "--allow-remote" in done.stderr and done.stdout == ""
