"""Where a `POST /memory/batch` of 100 spends its time and CPU, in-process (moto, the real handlers,
the real indexer fed by the table's stream), as py-spy is not available here: each step wrapped with a
timer of wall-clock and of its thread's CPU (a busy shared machine moves the first, far less the second).

    .venv/bin/python bench/batch_breakdown.py [--rounds 3] [--code DIR]

A mind gets two batches indexed first (so `similar` has an index and a matrix to compare with), then
`--rounds` batches of 100 new ~150-character memories (bench/ingest.py's), each followed by one run
of the stream pump. Printed per batch: the handler's wall and CPU, the steps of `similar` (embedding
and the ONNX Runtime runs, counted where they run: a worker thread embeds while the transactions go
on), the DynamoDB transactions, and the indexer's run (process CPU: moto's stream reads included).
`--code` measures another checkout's layer (e.g. a `git worktree` of main) with this script.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import importlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "SYNAPSE_MEMORIES_TABLE": "bench-memories",
    "SYNAPSE_MINDS_TABLE": "bench-minds",
    "SYNAPSE_JWT_SECRET": "test-jwt-secret-0123456789abcdef0123456789",  # tests.support.api signs with it
    "SYNAPSE_KEY_PEPPER": "bench-pepper-0123456789abcdef0123456789",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
    "POWERTOOLS_SERVICE_NAME": "synapse",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}
Spent = collections.defaultdict[str, list[float]]


def timed(spent: Spent, owner: Any, name: str, label: str) -> None:
    """Wrap owner.name so each call adds its wall-clock and thread CPU seconds to spent[label]."""
    if not hasattr(owner, name):
        return
    wrapped = getattr(owner, name)

    @functools.wraps(wrapped)
    def measured(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return wrapped(*args, **kwargs)
        finally:
            entry = spent[label]
            entry[0] += time.perf_counter() - wall
            entry[1] += time.thread_time() - cpu
            entry[2] += 1

    setattr(owner, name, measured)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    os.environ.update(ENVIRONMENT | {"SYNAPSE_DATA_DIR": tempfile.mkdtemp(prefix="synapse-bench-breakdown-")})
    code = args.code.resolve()
    sys.path[:0] = [str(code), str(code / "layers" / "synapse"), str(Path(__file__).resolve().parent)]
    import boto3
    from moto import mock_aws
    from synapse.embedding import minilm
    from synapse.index import vectors
    from synapse.search import relations, repeats
    from synapse.storage import tables

    from infra import motofix, template
    from infra.stream_pump import Pump
    from tests.support.api import Api

    # bench/ingest.py's memories, imported last: it puts its own checkout first on the path
    content = importlib.import_module("ingest").content

    spent: Spent = collections.defaultdict(lambda: [0.0, 0.0, 0])
    # main's similar_to is a function; here it is `_similar_to` behind an object with `ahead`
    similar = "_similar_to" if hasattr(repeats, "_similar_to") else "similar_to"
    for owner, name, label in [
        (repeats, similar, "similar_to, in the request"),
        (vectors, "embedded_once", "  embedded_once (any thread)"),
        (minilm.MiniLM, "_embed_batch", "    ONNX Runtime runs"),
        (relations, "labelled", "  relations.labelled"),
        (repeats, "_from_index", "  the matrix product"),
        (tables, "transact", "DynamoDB transactions"),
    ]:
        timed(spent, owner, name, label)
    motofix.apply()
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        client = boto3.client("dynamodb", region_name="us-east-1")
        template.create_tables(client, {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"})
        api = Api()
        mind = api.create_mind()
        pump = Pump.connect("bench-memories")
        sent = [0]

        def batch() -> None:
            items = [
                {"category": "note", "key": f"turn_{i}", "content": content(i)}
                for i in range(sent[0], sent[0] + 100)
            ]
            sent[0] += 100
            with contextlib.redirect_stdout(io.StringIO()):  # the handlers' metric lines
                answer = api.call("POST", "/memory/batch", token=mind.key, json_body={"memories": items})
            assert answer.status == 200, answer.text

        def indexed() -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                pump.run_once()

        for _ in range(2):
            batch()
            indexed()
        spent.clear()
        handler, indexer = [0.0, 0.0], [0.0, 0.0]
        for _ in range(args.rounds):
            wall, cpu = time.perf_counter(), time.process_time()
            batch()
            handler[0] += time.perf_counter() - wall
            handler[1] += time.process_time() - cpu
            wall, cpu = time.perf_counter(), time.process_time()
            indexed()
            indexer[0] += time.perf_counter() - wall
            indexer[1] += time.process_time() - cpu
    n = args.rounds
    print(f"{code}: per batch of 100, mean of {n}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<36}{'wall s':>8}{'CPU s':>8}{'calls':>7}")
    print(f"{'POST /memory/batch (process CPU)':<36}{handler[0] / n:8.3f}{handler[1] / n:8.3f}")
    for label, (wall, cpu, calls) in spent.items():
        print(f"{label:<36}{wall / n:8.3f}{cpu / n:8.3f}{calls / n:7.1f}")
    print(f"{'indexer: one pump run (process CPU)':<36}{indexer[0] / n:8.3f}{indexer[1] / n:8.3f}")


if __name__ == "__main__":
    main()
