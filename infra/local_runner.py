"""`make run`: Synapse on http://127.0.0.1:3000 without AWS or Docker.

What happens, in order:
1. The environment is fixed before anything imports `synapse` (settings are read once): fake AWS
   credentials and region when none are set, dev JWT secret and key pepper allowed
   (`SYNAPSE_ALLOW_DEV_SECRETS`; a real `SYNAPSE_JWT_SECRET`/`SYNAPSE_KEY_PEPPER` wins), tracing off,
   and `SYNAPSE_DATA_DIR` made absolute so every component finds the same folder.
2. DynamoDB: `SYNAPSE_DYNAMODB_ENDPOINT` when given (it keeps its own data); otherwise the embedded
   store `SYNAPSE_LOCAL_STORE` chooses (`infra.local_dynamo`): AWS's DynamoDB Local, storing in
   `<data dir>/dynamodb/` (the default when `java` is on PATH), or moto, whose items are restored
   from and saved to `<data dir>/dynamodb.json` (see `infra.local_snapshot`).
3. The tables of template.yaml are created (existing ones are kept). A moto snapshot found beside a
   new DynamoDB Local database is imported into it once (then renamed `dynamodb.json.imported`).
4. `start_background_services` starts what runs beside the HTTP server: the snapshot saver (moto only)
   and the stream pump that feeds the Memories table's stream to the search indexer (`infra.stream_pump`),
   and the template's scheduled functions on their rates (`infra.local_schedule`).
5. `infra.gateway.Gateway` serves the template's routes — the same handler files, API Gateway v2
   events, authorizer first — behind waitress (`infra.http_front`), bound to 127.0.0.1 only.
6. SIGINT/SIGTERM stop it cleanly: no new requests, in-flight ones finish, background services stop,
   a last snapshot is written (moto), then the embedded store stops. The signal handler only records
   the signal (`StopSignals`): GNU make forwards a SIGTERM to its child, so `make run` killed as a
   process group gets two back to back, and a handler that took a lock could deadlock in itself.

It prints the URL, the MCP endpoint (`<url>/mcp`), a dev JWT for `local-user` and a curl line that
creates a mind, then one access line per request (`SYNAPSE_LOCAL_LOG=access`, the default: the
handlers' warnings and errors still show, their INFO lines and metrics do not;
`SYNAPSE_LOCAL_LOG=json` prints those as Lambda does). It never prints or logs a Mind Key, request
bodies or query strings.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.local_snapshot import TableSnapshot

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
DEFAULT_PORT = 3000
DEV_USER = "local-user"
DEV_TOKEN_TTL = 24 * 3600
DRAIN_SECONDS = 10.0


def prepare_environment() -> Path:
    """Set what settings read, before any `synapse` import; returns the absolute data dir."""
    defaults = {
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": "us-east-1",
        "SYNAPSE_MEMORIES_TABLE": "synapse-memories",
        "SYNAPSE_MINDS_TABLE": "synapse-minds",
        "POWERTOOLS_SERVICE_NAME": "synapse",
        "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
    }
    for name, value in defaults.items():
        if not os.environ.get(name):
            os.environ[name] = value
    if not os.environ.get("AWS_REGION"):
        os.environ["AWS_REGION"] = os.environ["AWS_DEFAULT_REGION"]
    os.environ["SYNAPSE_ALLOW_DEV_SECRETS"] = "true"
    os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"
    data_dir = Path(os.environ.get("SYNAPSE_DATA_DIR") or ROOT / ".synapse").resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["SYNAPSE_DATA_DIR"] = str(data_dir)
    layer = str(ROOT / "layers" / "synapse")
    if layer not in sys.path:
        sys.path.insert(0, layer)
    return data_dir


def lock_data_dir(data_dir: Path) -> IO[bytes] | None:
    """Hold an exclusive lock on the data dir while running: two runners saving one snapshot would
    overwrite each other's data. Returns the open lock file (keep it), or None when it is taken."""
    handle = (data_dir / "runner.lock").open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def table_names() -> dict[str, str]:
    return {
        "MemoriesTable": os.environ["SYNAPSE_MEMORIES_TABLE"],
        "MindsTable": os.environ["SYNAPSE_MINDS_TABLE"],
    }


class StopSignals:
    """SIGINT and SIGTERM ask the runner to stop; the main thread waits for that with `wait`.

    The handler does nothing but assign a flag: no lock, no I/O, nothing that can block. A Python
    signal handler runs on the main thread between two bytecodes of whatever it interrupts, even of
    another handler, so one that took a lock (as `threading.Event.set` does) deadlocks when a second
    signal lands inside the first one's critical section. GNU make forwards SIGTERM to its child,
    so `kill -TERM -- -<pgid>` of `make run` delivers two back to back: that hung the runner before.
    The C-level handler also writes to a pipe (`signal.set_wakeup_fd`, async-signal-safe), which
    `wait` selects on, so the main thread wakes at once instead of polling the flag.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def install(self) -> None:
        """Handle SIGINT and SIGTERM from now on (main thread only, as `signal.signal` requires)."""
        signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        for signum in self.SIGNALS:
            signal.signal(signum, self._record)

    def _record(self, signum: int, frame: object) -> None:
        self.requested = True

    def wait(self, timeout: float) -> bool:
        """Whether a stop was asked for, waiting up to `timeout` seconds for one."""
        if not self.requested:
            readable, _, _ = select.select([self._read], [], [], timeout)
            if readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._read, 512)
        return self.requested


# ---------------------------------------------------------------- logs

LOG_VARIABLE = "SYNAPSE_LOCAL_LOG"
ACCESS_LOG = "access"
JSON_LOG = "json"
EMF_LINE = '{"_aws":'  # how every CloudWatch embedded-metric line powertools prints begins


class MetricLinesDropped:
    """stdout without the handlers' CloudWatch metric (EMF) lines; everything else passes as written.

    powertools prints each flush as one `print(json)`: the JSON, then the newline, as two writes of
    the same thread; the newline after a dropped line is dropped with it.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._dropping = threading.local()

    def write(self, text: str) -> int:
        if text.startswith(EMF_LINE):
            self._dropping.newline = not text.endswith("\n")
            return len(text)
        if getattr(self._dropping, "newline", False):
            self._dropping.newline = False
            if text == "\n":
                return len(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, encoding, isatty, buffer, …
        return getattr(self.stream, name)


def configure_logs() -> str:
    """Set up what `SYNAPSE_LOCAL_LOG` asks for, before any `synapse` import; returns an error message
    for a value it does not know ("" when fine).

    `access` (the default): one access line per request (`infra.http_front`) and nothing else per
    request: the handlers log at WARNING (unless `POWERTOOLS_LOG_LEVEL` says otherwise) and their
    metric lines are dropped. `json`: the handlers' JSON logs and metric lines too, as on AWS.
    """
    chosen = os.environ.get(LOG_VARIABLE, "").strip().lower() or ACCESS_LOG
    if chosen not in {ACCESS_LOG, JSON_LOG}:
        return f"{LOG_VARIABLE} must be {ACCESS_LOG} or {JSON_LOG}, not {chosen!r}"
    if chosen == ACCESS_LOG:
        if not os.environ.get("POWERTOOLS_LOG_LEVEL"):
            os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"
        if not isinstance(sys.stdout, MetricLinesDropped):
            sys.stdout = MetricLinesDropped(sys.stdout)
    return ""


# ---------------------------------------------------------------- DynamoDB


class EmbeddedDynamo:
    """moto's DynamoDB on a free loopback port, made atomic by infra.motofix.

    Served by waitress, not moto's own werkzeug server: werkzeug closes the connection after every
    answer and starts a thread per connection, so each DynamoDB call paid a TCP connect and a thread
    start: 6.0 ms a call in a loop of PutItem and GetItem, 4.8 ms served by waitress, which keeps
    botocore's connections alive and answers from a pool (`THREADS`: the runner's callers at once).
    Through the runner a store moves by less than its noise: the GIL the calls share costs more
    (docs/benchmarks.md, "A single store")."""

    THREADS = 8

    def __init__(self) -> None:
        import logging

        import waitress  # type: ignore[import-untyped]  # no stubs pinned
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

        from infra import motofix

        motofix.apply()
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "queue depth" under bursts
        app = DomainDispatcherApplication(create_backend_app)
        self.server = waitress.create_server(
            app,
            map={},
            host=HOST,
            port=0,
            threads=self.THREADS,
            ident="moto",
            clear_untrusted_proxy_headers=False,  # none: only this process calls it
        )
        self.endpoint_url = f"http://{HOST}:{self.server.effective_port}"
        threading.Thread(target=self.server.run, name="synapse-moto", daemon=True).start()

    def stop(self) -> None:
        self.server.close()


def moto_snapshot(data_dir: Path, client: Any) -> TableSnapshot:
    """The embedded moto's snapshot, saved from its tables in this process (no Scan to serialize)."""
    from infra import motofix
    from infra.local_snapshot import TableSnapshot

    return TableSnapshot(data_dir, client, table_names(), motofix.table_items)


def dynamodb_client(endpoint_url: str) -> Any:
    import boto3

    from infra.local_dynamo import client_config

    return boto3.client(
        "dynamodb", endpoint_url=endpoint_url, region_name=os.environ["AWS_REGION"], config=client_config()
    )


def open_embedded_store(data_dir: Path) -> tuple[str, str, Callable[[], None], bool]:
    """Start the store SYNAPSE_LOCAL_STORE chooses: (endpoint, banner line, stop, is moto).
    Raises local_dynamo.StoreError when the chosen one cannot run."""
    from infra import local_dynamo

    store, note = local_dynamo.choose_store(os.environ)
    if note:
        print(f"synapse-local: {note}", file=sys.stderr, flush=True)
    if store == local_dynamo.MOTO:
        moto = EmbeddedDynamo()
        storage = f"embedded moto at {moto.endpoint_url}, data saved in {data_dir}"
        return moto.endpoint_url, storage, moto.stop, True
    local = local_dynamo.DynamoDBLocal(data_dir)
    endpoint_url = local.start()
    local_dynamo.install_commit_barrier(endpoint_url, table_names()["MindsTable"], _some_key("MindsTable"))
    return endpoint_url, f"DynamoDB Local at {endpoint_url}, data in {local.db_dir}", local.stop, False


def _some_key(logical_id: str) -> dict[str, Any]:
    """A key of the template table `logical_id` (its attributes typed as the template says)."""
    from infra import template

    definition = template.table_definitions()[logical_id]
    types = {a["AttributeName"]: a["AttributeType"] for a in definition["AttributeDefinitions"]}
    return {k["AttributeName"]: {types[k["AttributeName"]]: "0"} for k in definition["KeySchema"]}


def import_moto_snapshot(snapshot: TableSnapshot, was_empty: bool) -> None:
    """A data dir that moto used before: its snapshot goes into the new DynamoDB Local database once."""
    if not was_empty or not snapshot.path.exists():
        return
    restored = snapshot.restore()
    snapshot.path.rename(snapshot.path.with_name(snapshot.path.name + ".imported"))
    print(f"Imported {sum(restored.values())} items from moto's {snapshot.path}", flush=True)


def start_background_services(
    endpoint_url: str, stop: threading.Event, snapshot: TableSnapshot | None = None, moto: bool = False
) -> list[threading.Thread]:
    """Start what runs beside the HTTP server until `stop` is set; called once the tables exist.

    Each service is one `threads.append(...)` line; `endpoint_url` is the DynamoDB endpoint in use,
    `moto` whether it is the embedded moto (whose stream the pump then reads in-process).
    On a clean stop the runner sets `stop` and joins these threads before its last snapshot.
    """
    from infra import local_invoke, local_queue, local_schedule, stream_pump

    threads = []
    if snapshot is not None:
        threads.append(_start("snapshot", snapshot.run, stop))
    streams = None
    if moto:
        from infra import motofix

        streams = motofix.InProcessStreams()
    threads.append(stream_pump.start(endpoint_url, os.environ["SYNAPSE_MEMORIES_TABLE"], stop, streams))
    threads.append(local_queue.start(stop))  # webhook deliveries (loopback only if the user opts in)
    threads.append(local_schedule.start(stop))  # the template's Schedule events (expiry sweep, …)
    threads.append(local_invoke.start(stop))  # a deleted mind's purge, after DELETE has answered
    return threads


def _start(name: str, target: Callable[..., None], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name=f"synapse-{name}", daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- banner


def dev_token() -> str | None:
    """An HS256 JWT for `local-user`, signed with the secret the authorizer checks (None with JWKS)."""
    from synapse.core.settings import get_settings

    from infra.token import mint

    settings = get_settings()
    if settings.jwks_url or "HS256" not in settings.jwt_algorithms:
        return None
    return mint(settings.jwt_secret, DEV_USER, DEV_TOKEN_TTL, settings.jwt_issuer, settings.jwt_audience)


def banner(url: str, token: str | None, storage: str) -> str:
    from synapse.core.settings import get_settings

    if get_settings().webhooks_allow_loopback:
        loopback = "on (SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true: receivers on this machine, http:// too)"
    else:
        loopback = "off (start with SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK=true make run to reach this machine)"
    lines = [
        f"Synapse is running on {url}",
        f"Console: {url}/console" + (" (one-click dev sign-in)" if token is not None else ""),
        f"DynamoDB: {storage}",
        f"MCP: {url}/mcp (Streamable HTTP: a Mind Key as Authorization: Bearer mk_…, "
        "or a client's OAuth sign-in; docs/agents.md)",
        f"Webhook delivery to loopback: {loopback}",
        "",
    ]
    if token is None:
        lines.append("JWTs come from SYNAPSE_JWKS_URL: use a token from your identity provider.")
    else:
        lines += [
            f"Dev JWT (sub {DEV_USER}, valid 24 h):",
            f"JWT={token}",
            "",
            "Create a mind (the answer holds its Mind Key, shown once):",
            f'curl -s -X POST {url}/minds -H "Authorization: Bearer {token}" '
            f'-H "Content-Type: application/json" -d \'{{"name":"My Mind"}}\'',
        ]
    if token is not None and os.environ.get("SYNAPSE_DEMO") != "1":
        lines += ["", "The example mind, ready to recall: make demo (or SYNAPSE_DEMO=1 make run)."]
    lines += ["", "Stop with Ctrl+C (data is saved)."]
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def main() -> int:
    refused = configure_logs()
    if refused:
        print(f"synapse-local: {refused}", file=sys.stderr)
        return 2
    data_dir = prepare_environment()
    raw_port = os.environ.get("PORT") or str(DEFAULT_PORT)
    if not raw_port.isdigit() or int(raw_port) > 65535:
        print(f"synapse-local: PORT must be a port number, not {raw_port!r}", file=sys.stderr)
        return 2
    from infra.http_front import HttpFront, bound_listener

    try:  # before the store starts: its clients' source ports come from the same range
        listener = bound_listener(int(raw_port))
    except OSError as error:
        print(f"synapse-local: cannot listen on {HOST}:{raw_port}: {error} (set PORT)", file=sys.stderr)
        return 2
    stop = threading.Event()  # set by the main thread only: background services stop on it
    signals = StopSignals()
    signals.install()

    from infra import template
    from infra.gateway import Gateway, load_handler
    from infra.local_dynamo import StoreError
    from infra.local_snapshot import SnapshotError, TableSnapshot

    stop_store: Callable[[], None] = lambda: None  # noqa: E731
    external = os.environ.get("SYNAPSE_DYNAMODB_ENDPOINT", "").strip()
    moto = False
    try:
        if external:
            endpoint_url, storage = external, f"{external} (data kept there)"
        else:
            lock = lock_data_dir(data_dir)
            if lock is None:
                print(f"synapse-local: another runner is using {data_dir}", file=sys.stderr)
                return 2
            endpoint_url, storage, stop_store, moto = open_embedded_store(data_dir)
            os.environ["SYNAPSE_DYNAMODB_ENDPOINT"] = endpoint_url
        client = dynamodb_client(endpoint_url)
        was_empty = not client.list_tables()["TableNames"]
        template.create_tables(client, table_names())
        snapshot = moto_snapshot(data_dir, client) if moto else None
        if snapshot is not None:
            restored = snapshot.restore()
            if restored:
                print(f"Restored {sum(restored.values())} items from {snapshot.path}", flush=True)
        elif not external:
            import_moto_snapshot(TableSnapshot(data_dir, client, table_names()), was_empty)

        gateway = Gateway()
        for route in gateway.routes:  # import every handler now: a broken one fails at start
            load_handler(route.code_dir, route.handler)
        server = HttpFront(listener, gateway, snapshot.mark_dirty if snapshot else lambda: None)
        threads = start_background_services(endpoint_url, stop, snapshot, moto)
        token = dev_token()
        if token is not None:  # the console's one-click sign-in (synapse.api.console), local only
            from synapse.core.settings import get_settings

            os.environ["SYNAPSE_CONSOLE_DEV_TOKEN"] = token
            get_settings.cache_clear()  # settings are read once; the token exists only from here on
        serving = _start("http", server.serve_forever, 0.1)
        url = f"http://{HOST}:{server.server_address[1]}"
        print(banner(url, token, storage), flush=True)
        if os.environ.get("SYNAPSE_DEMO") == "1":  # make demo: the example mind of docs/rules.md §4
            from infra import demo

            print(demo.run(url, dev_token()), flush=True)

        while not signals.wait(0.2) and serving.is_alive():
            pass
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl+C ends it at once
        print("Stopping…", flush=True)
        server.shutdown()
        server.drain(DRAIN_SECONDS)
        stop.set()
        for thread in threads:
            thread.join(timeout=DRAIN_SECONDS)
        if snapshot is not None:
            saved = snapshot.save()
            print(f"Saved {saved} items to {snapshot.path}", flush=True)
        server.server_close()
        return 0
    except (SnapshotError, StoreError) as error:
        print(f"synapse-local: {error}", file=sys.stderr)
        return 2
    finally:
        stop_store()


if __name__ == "__main__":
    code = main()
    # Everything is saved and closed; skip the interpreter's slow teardown of moto's state (~1 s).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
