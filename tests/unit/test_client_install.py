"""`make client` installs the Python client, the `synapse` CLI and its MCP server alone (issue 21,
item 7), every package at the version requirements/dev.txt pins. No network: the Makefile is read with
`make -n` (nothing runs), the pins are compared with the package metadata installed in this venv."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "clients" / "python" / "pyproject.toml"
_PIN = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)$")


def dev_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "requirements" / "dev.txt").read_text(encoding="utf-8").splitlines():
        found = _PIN.match(line.strip())
        if found:
            pins[canonicalize_name(found[1])] = found[2]
    return pins


def client_requirements() -> list[Requirement]:
    """What clients/python declares: its dependencies and the `mcp` extra (`synapse mcp`)."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return [Requirement(text) for text in project["dependencies"] + project["optional-dependencies"]["mcp"]]


def test_make_client_installs_the_client_alone_with_every_package_pinned_by_dev_txt(tmp_path: Path) -> None:
    # Given a fresh place for the venv (so make plans every step; -n runs none of them)
    venv = tmp_path / "venv"
    # When `make client` is planned
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    planned = subprocess.run(  # noqa: S603 - fixed argv: make -n with our own target
        [make, "-n", "--no-print-directory", "client", f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tool = [line for line in planned.splitlines() if "/pip install" in line]
    installs = [line for line in planned.splitlines() if "/uv pip install" in line]
    # Then the venv's pip installs the pinned uv and nothing else
    assert len(tool) == 1 and re.search(r" uv==\d+\.\d+\.\d+$", tool[0]), planned
    # And uv installs the client's requirements constrained by dev.txt, then the client without deps
    assert len(installs) == 2, planned
    assert f"-r {venv}/client.in" in installs[0] and "-c requirements/dev.txt" in installs[0]
    assert "--no-deps" in installs[1] and "-e ./clients/python" in installs[1]
    # And nothing of the dev set or of `make run` comes with it
    assert "requirements/run.txt" not in planned
    assert "-r requirements/dev.txt" not in planned


def test_the_clients_requirements_are_pinned_in_dev_txt_at_versions_they_accept() -> None:
    pins = dev_pins()
    for requirement in client_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not pinned in requirements/dev.txt"
        assert requirement.specifier.contains(pins[name]), (
            f"dev.txt pins {name}=={pins[name]}: not {requirement}"
        )


def test_everything_the_client_pulls_in_is_pinned_in_dev_txt() -> None:
    # Given the client's requirements and, from the installed metadata, theirs (for this platform)
    pins = dev_pins()
    seen: set[str] = set()
    pending = [(requirement, frozenset(requirement.extras)) for requirement in client_requirements()]
    pending.append((Requirement("setuptools"), frozenset()))  # what builds the editable client
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here (the dev set is not)")
        for text in distribution.requires or []:
            child = Requirement(text)
            environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
            if child.marker is None or any(child.marker.evaluate(env) for env in environments):
                pending.append((child, frozenset(child.extras)))
    # Then every one of them is pinned, so `-c requirements/dev.txt` leaves no version to chance
    assert {"httpx", "pydantic", "mcp"} <= seen
    assert sorted(seen - set(pins)) == []
