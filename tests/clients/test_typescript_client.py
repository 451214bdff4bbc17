"""The TypeScript client (clients/typescript) against a real `make run`: `npm ci` from the committed
lockfile (npm's cache makes a repeat offline-tolerant), its compile, then Node's own test runner with
the runner's URL and a person's JWT in the environment; and the drift check of the generated types
against openapi.json (`npm test` runs all three). Skipped only where node or npm is missing."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess

import pytest

from tests.support.runner import ROOT, RunningService

PACKAGE = ROOT / "clients" / "typescript"
STAMP = PACKAGE / "node_modules" / ".synapse-package-lock.json"  # the lockfile it was installed from

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="the TypeScript client's tests need node and npm",
)


def npm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 — npm from PATH, our own package
        [str(shutil.which("npm")), *args],
        cwd=PACKAGE,
        env=(os.environ | (env or {})),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def installed() -> None:
    """`npm ci` unless node_modules already holds exactly what package-lock.json pins."""
    lock = (PACKAGE / "package-lock.json").read_bytes()
    with (PACKAGE / "package.json").open("rb") as guard:  # one install at a time (xdist workers)
        fcntl.flock(guard, fcntl.LOCK_EX)
        if STAMP.is_file() and STAMP.read_bytes() == lock:
            return
        done = npm("ci", "--prefer-offline", "--no-audit", "--no-fund")
        assert done.returncode == 0, done.stdout + done.stderr
        STAMP.write_bytes(lock)


def test_the_typescript_client_passes_its_node_tests_against_the_runner(runner: RunningService) -> None:
    # Given the package installed from its lockfile and compiled (`npm test` is `npm run build`, the
    # drift check and this compile, then `npm run test:node`: the drift check is the next test's)
    installed()
    compiled = npm("run", "compile")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr

    # When its node:test suite runs against the runner
    done = npm("run", "test:node", env={"SYNAPSE_URL": runner.url, "SYNAPSE_JWT": runner.jwt})

    # Then every test passed and none was skipped
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "# fail 0" in output, output
    assert "# SKIP" not in output, output


def test_the_committed_types_and_tool_specs_are_what_their_sources_generate() -> None:
    # Given the package installed
    installed()

    # When the generators check src/openapi.ts against openapi.json, src/mcp-tools.ts against mcp_tools.json
    done = npm("run", "check-types")

    # Then both are up to date (else: `npm run generate` in clients/typescript, and commit)
    assert done.returncode == 0, done.stdout + done.stderr
