"""The runner stops cleanly however many SIGTERMs reach it at once (issue 21, item 1).

GNU make forwards a SIGTERM to its child, so killing `make run`'s process group (`kill -TERM --
-<pgid>`, as a service manager, CI or `timeout` does) delivers two to the runner, back to back. Its
old handler (`stop.set()`, which takes a lock) could run inside itself and deadlock: the runner kept
its port and data-dir lock until a `kill -9`. Each round here starts a runner on the same port and
data dir, sends that double SIGTERM and then more pairs with short random gaps until it exits (so a
signal lands inside the handling of the one before, which one pair alone does only now and then),
and checks it exited cleanly and let go of both. `SIGNAL_ROUNDS=50` runs 50 rounds (minutes).

On DynamoDB Local, the first round first checks that the store outlives a SIGTERM to the group until
the runner has drained (its java child ignores SIGINT and SIGTERM, and the runner's own stop ends
it): one start fewer than a test of its own.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

from infra.local_runner import lock_data_dir
from tests.e2e.conftest import Http
from tests.support.runner import RunningService, dynamodb_local_missing, free_port, start_runner

ROUNDS = int(os.environ.get("SIGNAL_ROUNDS") or 4)
STORM_SECONDS = 1.5  # more pairs for this long, or until the runner has exited
EXIT_SECONDS = 20.0  # a clean stop takes about a second; a hung runner never exits


def double_sigterm(process: subprocess.Popen[bytes], rng: random.Random) -> int:
    """SIGTERM twice to the runner's process group, as `make run` gets it, then pairs again after
    0-60 µs gaps while it runs (for at most STORM_SECONDS); returns how many signals were sent."""
    sent = 0
    storm_until = time.monotonic() + STORM_SECONDS
    while process.poll() is None and time.monotonic() < storm_until:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
            os.killpg(process.pid, signal.SIGTERM)
            sent += 2
        gap_until = time.perf_counter() + rng.uniform(0, 60e-6)
        while time.perf_counter() < gap_until:
            pass
    return sent


def port_is_free(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:port now (SO_REUSEADDR, as waitress binds)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def data_dir_is_free(data_dir: Path) -> bool:
    lock = lock_data_dir(data_dir)
    if lock is None:
        return False
    lock.close()
    return True


def test_repeated_double_sigterms_always_stop_the_runner_and_free_its_port_and_data_dir(
    tmp_path: Path,
) -> None:
    rng = random.Random(21)
    port, data_dir, log = free_port(), tmp_path / "data", tmp_path / "runner.log"
    for round_number in range(1, ROUNDS + 1):
        # Given a runner on the same port and data dir as the round before (so both were let go)
        printed = log.stat().st_size if log.exists() else 0
        service = start_runner(data_dir, log, env={"PORT": str(port)})
        assert service.url.endswith(f":{port}")
        if round_number == 1 and not dynamodb_local_missing() and Path("/proc/self/status").exists():
            try:
                check_the_store_outlives_the_groups_sigterm(service)
            except BaseException:
                service.crash()
                raise
        # When its process group gets SIGTERM twice back to back, and again, until it exits
        sent = double_sigterm(service.process, rng)
        try:
            code = service.process.wait(EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            service.crash()
            raise AssertionError(
                f"round {round_number}: the runner hung after {sent} SIGTERMs:\n{service.output()[printed:]}"
            ) from None
        service.stop()
        # Then it stopped as on one signal: cleanly, once, and its port and data dir are free
        output = log.read_bytes()[printed:].decode("utf-8", errors="replace")
        assert code == 0, f"round {round_number}: exit {code} after {sent} SIGTERMs:\n{output}"
        assert output.count("Stopping…") == 1, output
        # And its store served until the end (the runner stops it after the drain), and nothing of
        # its process group is left
        assert '"level":"ERROR"' not in output, output
        # (on DynamoDB Local, the runner's own stop ended its java child)
        assert not group_alive(service.process.pid), f"round {round_number}: a child outlived the runner"
        assert port_is_free(port), f"round {round_number}: port {port} still taken"
        assert data_dir_is_free(data_dir), f"round {round_number}: {data_dir} still locked"


def group_members(pgid: int) -> list[int]:
    """The processes of a process group other than its leader (Linux's /proc)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and int(stat.parent.name) != pgid:
            members.append(int(stat.parent.name))
    return members


def ignored_signals(pid: int) -> set[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            mask = int(line.split()[1], 16)
            return {number for number in range(1, 65) if mask >> (number - 1) & 1}
    return set()


def check_the_store_outlives_the_groups_sigterm(service: RunningService) -> None:
    """A runner on DynamoDB Local, its java child in the runner's process group: java ignores the
    SIGINT and SIGTERM a Ctrl+C or `kill -TERM -- -<pgid>` sends the group (before, it died at once
    and the runner's last requests and stream reads were refused), and after a SIGTERM of its own
    the store still serves."""
    assert service.store.startswith("DynamoDB Local"), service.output()
    [java] = group_members(service.process.pid)
    assert {signal.SIGINT, signal.SIGTERM} <= ignored_signals(java)
    os.kill(java, signal.SIGTERM)
    http = Http(service.url)
    for _ in range(5):
        assert http.call("POST", "/minds", token=service.jwt, json_body={"name": "A"}).status_code == 201
        time.sleep(0.1)
    assert java in group_members(service.process.pid)
