"""Persistence for the local runner's moto fallback (`SYNAPSE_LOCAL_STORE=moto`): one JSON file of
every table's items. (DynamoDB Local, the default store, keeps its own database; the runner reads
this file there only once, to import what moto saved in a data dir before.)

moto keeps tables in memory, so the runner saves them to `<data dir>/dynamodb.json` and loads them
back on the next start. A crash loses what was written since the last save:

- Items are kept in DynamoDB's wire format (`{"S": ...}`, `{"N": "1.50"}`, …) exactly as the
  low-level client returns them, so every type round-trips (numbers stay decimal text; binary,
  which JSON cannot hold, is written as base64 and decoded again on load).
- Tables are keyed by their logical id in template.yaml, so renaming the physical tables through
  `SYNAPSE_*_TABLE` keeps the data.
- A save reads each table and replaces the file atomically (temp file, fsync, `os.replace`): a crash
  leaves the previous snapshot or the new one, never half of one. The runner's embedded moto is read
  in-process (`motofix.table_items`): a Scan through moto's serializer cost ~0.5 ms of CPU an item,
  half of what the runner spent while memories arrived; any other endpoint is scanned.
- Saves happen while something was written (`mark_dirty`), every `interval` seconds or, for a table
  large enough that a save takes longer than a tenth of that, `QUIET_FACTOR` times as long as the
  last save took (the saver's share of the CPU the requests need stays under a tenth), and once
  more on a clean stop after the HTTP server has drained. A periodic save taken while writes are
  still arriving is consistent per item, not per transaction; the save on a clean stop is exact.
- A load writes the items back with BatchWriteItem into the freshly created tables.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

FORMAT = 1
FILE_NAME = "dynamodb.json"
BATCH = 25  # BatchWriteItem's limit
QUIET_FACTOR = 10.0  # between two saves, at least this many times the last one's duration

# A table's items in the JSON protocol's form, binary as base64 text: what `_to_json` makes of a Scan.
ItemReader = Callable[[str], Iterable[dict[str, Any]]]


class SnapshotError(RuntimeError):
    """The snapshot file exists but cannot be read; the runner refuses to start rather than lose it."""


def _to_json(value: dict[str, Any]) -> dict[str, Any]:
    """One wire-format attribute value → JSON-safe (binary as base64)."""
    (kind, inner), *_ = value.items()
    if kind == "B":
        return {"B": base64.b64encode(inner).decode()}
    if kind == "BS":
        return {"BS": [base64.b64encode(b).decode() for b in inner]}
    if kind == "M":
        return {"M": {k: _to_json(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_to_json(v) for v in inner]}
    return value


def _from_json(value: dict[str, Any]) -> dict[str, Any]:
    (kind, inner), *_ = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(b) for b in inner]}
    if kind == "M":
        return {"M": {k: _from_json(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_from_json(v) for v in inner]}
    return value


class TableSnapshot:
    """Saves and restores the items of `tables` ({logical id: physical name}) through `client`."""

    def __init__(
        self, data_dir: Path, client: Any, tables: dict[str, str], read: ItemReader | None = None
    ) -> None:
        """`read`: a cheaper way to a table's items than a Scan through `client` (the embedded moto)."""
        self.path = data_dir / FILE_NAME
        self.client = client
        self.tables = tables
        self._read = read or self._scan
        self.last_save_seconds = 0.0
        self._dirty = threading.Event()
        self._saving = threading.Lock()

    def mark_dirty(self) -> None:
        self._dirty.set()

    # ------------------------------------------------------------ load

    def restore(self) -> dict[str, int]:
        """Write the saved items into the (empty) tables; returns the item count per logical id."""
        for stale in self.path.parent.glob(".dynamodb-*.tmp"):  # a save a crash cut short
            stale.unlink(missing_ok=True)
        if not self.path.exists():
            return {}
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            saved: dict[str, list[dict[str, Any]]] = document["tables"]
            if document.get("format") != FORMAT:
                raise ValueError(f"unknown format {document.get('format')!r}")
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SnapshotError(
                f"Cannot read the local data snapshot {self.path}: {error}. "
                "Move it away to start empty, or point SYNAPSE_DATA_DIR elsewhere."
            ) from error
        counts = {}
        for logical, items in saved.items():
            if logical not in self.tables:
                continue
            self._write_all(self.tables[logical], [{k: _from_json(v) for k, v in i.items()} for i in items])
            counts[logical] = len(items)
        return counts

    def _write_all(self, table: str, items: list[dict[str, Any]]) -> None:
        for start in range(0, len(items), BATCH):
            requests = [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH]]
            pending: dict[str, Any] = {table: requests}
            while pending:
                answer = self.client.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}

    # ------------------------------------------------------------ save

    def _scan(self, table: str) -> Iterator[dict[str, Any]]:
        for page in self.client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
            yield from ({k: _to_json(v) for k, v in item.items()} for item in page.get("Items", []))

    def save(self) -> int:
        """Write every table's items to the snapshot file atomically; returns the item count."""
        with self._saving:
            started = time.monotonic()
            self._dirty.clear()
            tables = {logical: list(self._read(physical)) for logical, physical in self.tables.items()}
            # One `dumps`, not `dump`: the C encoder in one go, not a Python write per fragment.
            text = json.dumps({"format": FORMAT, "tables": tables}, separators=(",", ":"))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temp = tempfile.mkstemp(prefix=".dynamodb-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temp, self.path)
            except BaseException:
                Path(temp).unlink(missing_ok=True)
                raise
            self.last_save_seconds = time.monotonic() - started
            return sum(len(items) for items in tables.values())

    def run(self, stop: threading.Event, interval: float = 2.0) -> None:
        """Save while anything was written, every `interval` seconds or `QUIET_FACTOR` times the last
        save's duration if longer, until `stop` is set."""
        while not stop.wait(max(interval, QUIET_FACTOR * self.last_save_seconds)):
            if self._dirty.is_set():
                try:
                    self.save()
                except Exception as error:  # keep serving; the next tick or the final save retries
                    self._dirty.set()
                    print(f"synapse-local: snapshot failed: {error}", flush=True)
