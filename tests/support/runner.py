"""Start `python -m infra.local_runner` as a subprocess on a free port, for the e2e tests.

Each runner leads its own process group (session), as `make run` in a terminal would: `crash()` kills
that whole group with SIGKILL (the runner and its DynamoDB Local java child at once), and pytest is
never in it. The store is the runner's default (DynamoDB Local when java is on PATH) unless the
developer's own `SYNAPSE_LOCAL_STORE`, or the test's `env`, says otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
import requests

from infra import local_dynamo

ROOT = Path(__file__).resolve().parents[2]
JWT_LINE = re.compile(r"^JWT=(\S+)$", re.MULTILINE)
URL_LINE = re.compile(r"Synapse is running on (http://\S+)")
STORE_LINE = re.compile(r"^DynamoDB: (.+)$", re.MULTILINE)
ACCESS_5XX = re.compile(r"^synapse-local: [A-Z]+ \S+ 5\d\d ")
# One access line per request (`SYNAPSE_LOCAL_LOG=access`, the default), and the banner's last line.
ACCESS_LINE = re.compile(r"^synapse-local: [A-Z]+ /\S* \d{3} \d+\.\dms$")
BANNER_END = "Stop with Ctrl+C (data is saved)."
# The stream pump polls every 0.3 s: what the runner would print about a request is out by then.
SETTLE_SECONDS = 2.0


DYNAMODB_LOCAL = {"SYNAPSE_LOCAL_STORE": "dynamodb-local"}
# Seconds a runner may take to come up: generous, as on a loaded CI machine (a slow start is no failure).
STARTUP = 120.0
# A shared runner serves a whole test process: every test's minds belong to its one dev user, so the
# per-user mind limit (100 by default) is raised past what a run creates; tests of the limit itself
# start their own runner or use moto.
SHARED = {"SYNAPSE_MAX_MINDS_PER_USER": "10000"}
# Webhooks may be delivered to receivers on this machine (tests/support/receiver.py).
LOOPBACK = {"SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK": "true"}
# DynamoDB Local's JVM for a test runner: the client compiler only and the serial collector. A start
# is mostly the JVM warming up, and on two busy cores the optimizing compiler's threads compete with
# everything else: this halves a start (about 13 s to 6 s under load), and a test's few thousand
# requests never run long enough to miss what that compiler would have made faster. Its "Picked up
# JAVA_TOOL_OPTIONS" line goes to the jar's own log, not the runner's output. A developer's own
# JAVA_TOOL_OPTIONS wins.
JVM_OPTIONS = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


class SharedStore:
    """One DynamoDB Local for the runners a test process starts whose subject is not the store's own
    life (a crash, a restart, its process group): each gets tables of its own in it
    (`SYNAPSE_DYNAMODB_ENDPOINT`, as the runner documents), saving each a JVM start (seconds). Where
    DynamoDB Local cannot run (no java, not in CI) there is none, and a runner starts on its default
    store as before."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.local: local_dynamo.DynamoDBLocal | None = None
        self.started = 0

    def env(self, name: str) -> dict[str, str]:
        """The settings for one more runner (`name` names its tables): the shared endpoint, and a
        table name prefix no runner of this process had."""
        if dynamodb_local_missing():
            return {}
        if self.local is None:
            self.local = local_dynamo.DynamoDBLocal(self.data_dir)
            with _environment(JVM_OPTIONS | {k: v for k, v in os.environ.items() if k in JVM_OPTIONS}):
                self.local.start()
        self.started += 1
        prefix = f"{name}-{self.started}"
        return {
            "SYNAPSE_DYNAMODB_ENDPOINT": self.local.endpoint_url,
            "SYNAPSE_MEMORIES_TABLE": f"{prefix}-memories",
            "SYNAPSE_MINDS_TABLE": f"{prefix}-minds",
        }

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in os.environ for the block (the JVM's child inherits them), then as before."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def dynamodb_local_missing() -> str:
    """Why a runner cannot use DynamoDB Local here (no java, jar not fetched), or "" when it can, or
    when the environment insists on it (CI sets SYNAPSE_LOCAL_STORE=dynamodb-local: fail, not skip)."""
    if os.environ.get("SYNAPSE_LOCAL_STORE") == "dynamodb-local":
        return ""
    if shutil.which("java") is None:
        return "DynamoDB Local needs java"
    if not local_dynamo.jar_path().is_file():
        return "DynamoDB Local is not fetched (make dynamodb-local)"
    return ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def runner_environment(data_dir: Path, port: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The developer's view: no SYNAPSE_* settings (dev secrets, default tables) but a private data dir,
    a quick-starting JVM (`JVM_OPTIONS`), plus `extra`."""
    env = JVM_OPTIONS | {
        k: v for k, v in os.environ.items() if not k.startswith("SYNAPSE_") or k == "SYNAPSE_LOCAL_STORE"
    }
    env.update({"PORT": str(port), "SYNAPSE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


@dataclass
class RunningService:
    process: subprocess.Popen[bytes]
    data_dir: Path
    url: str
    jwt: str
    log_path: Path
    _log: IO[bytes]

    def output(self) -> str:
        """Everything the runner printed (stdout and stderr) so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 20.0) -> int:
        """Stop it the way Ctrl+C or a service manager would; returns its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
        return self.process.returncode

    def crash(self) -> None:
        """End its whole process group without any chance to clean up (SIGKILL), as a power cut would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._log.close()

    @property
    def store(self) -> str:
        """The banner's `DynamoDB: …` line (e.g. `DynamoDB Local at http://…`)."""
        found = STORE_LINE.search(self.output())
        return found.group(1) if found else ""

    def after_banner(self) -> list[str]:
        """The non-blank lines printed after the start banner."""
        output = self.output()
        assert BANNER_END in output, output
        return [line for line in output.split(BANNER_END, 1)[1].splitlines() if line.strip()]

    def server_errors(self) -> list[str]:
        """Access-log lines of requests answered with a 5xx."""
        return [line for line in self.output().splitlines() if ACCESS_5XX.match(line)]


@contextlib.contextmanager
def running(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    env: dict[str, str] | None = None,
    timeout: float = STARTUP,
) -> Iterator[RunningService]:
    """A runner on a fresh data dir for a fixture's scope: stopped cleanly at the end, and none of the
    requests it served may have been answered with a 5xx."""
    base = tmp_path_factory.mktemp(name)
    service = start_runner(base / "data", base / "runner.log", env, timeout)
    yield service
    assert service.stop() == 0, service.output()
    assert service.server_errors() == [], service.server_errors()


class PortTaken(RuntimeError):
    """The free port picked for a runner was taken before it could bind it."""


def start_runner(
    data_dir: Path,
    log_path: Path,
    env: dict[str, str] | None = None,
    timeout: float = STARTUP,
    root: Path = ROOT,
) -> RunningService:
    """Start the runner (of the code in `root`: a bench's older side may be elsewhere) and wait until
    it has printed its JWT and answers HTTP. A port picked here can be taken by another process's
    outgoing connection before the runner binds it: then it starts again on another (a PORT given in
    `env` is the test's own, and its refusal is the test's to see)."""
    for _ in range(0 if "PORT" in (env or {}) else 2):
        try:
            return _start_runner_once(data_dir, log_path, env, timeout, root)
        except PortTaken:
            continue
    return _start_runner_once(data_dir, log_path, env, timeout, root)


def _start_runner_once(
    data_dir: Path, log_path: Path, env: dict[str, str] | None, timeout: float, root: Path
) -> RunningService:
    port = free_port()
    start = log_path.stat().st_size if log_path.exists() else 0
    log = log_path.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.local_runner"],
        cwd=root,
        env=runner_environment(data_dir, port, env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.close()
            printed = log_path.read_bytes()[start:].decode("utf-8", errors="replace")
            refusal = PortTaken if "Address already in use" in printed else RuntimeError
            raise refusal(f"the runner exited with {process.returncode}:\n{log_path.read_text()}")
        printed = log_path.read_bytes()[start:].decode("utf-8", errors="replace")
        token, url = JWT_LINE.search(printed), URL_LINE.search(printed)
        if token and url:
            try:
                requests.get(f"{url.group(1)}/", timeout=2)
            except requests.ConnectionError:
                pass
            else:
                return RunningService(process, data_dir, url.group(1), token.group(1), log_path, log)
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    log.close()
    raise RuntimeError(f"the runner did not start within {timeout} s:\n{log_path.read_text()}")
