"""No acknowledged write is lost when the runner's whole process group is killed at a random moment.

Writers on several threads store memories against the runner on its default store (DynamoDB Local):
most under keys of their own, some racing on a few shared keys (an upsert bumps the version). The
runner's process group (the runner and its java child) gets SIGKILL at a random moment while they
write. A new runner on the same data dir must then hold:
- every memory answered 2xx, under its key, with the version and content that answer gave, or a
  later version only where a later write to that key was sent and never answered (it may have been
  applied just before the kill);
- no two answers for one key that gave the same version (no lost update);
- the mind's `memory_count` equal to the memories listed;
- the last write acknowledged before the kill (to a key no other write touched) read back by its id:
  a write answered 2xx survives a crash right after it.
Set `DURABILITY_SEED` to replay one run's timing and choice of keys.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import DYNAMODB_LOCAL, RunningService, dynamodb_local_missing, start_runner

WRITERS = 8
SHARED_KEYS = ["shared_0", "shared_1", "shared_2"]
SHARED_SHARE = 0.25  # of the writes go to a shared key

pytestmark = pytest.mark.skipif(bool(dynamodb_local_missing()), reason=dynamodb_local_missing())


@dataclass
class Ledger:
    """What the writers sent and what was acknowledged, per key."""

    acked: dict[str, list[tuple[int, str, str]]] = field(default_factory=lambda: defaultdict(list))
    unanswered: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_own: tuple[str, str] = ("", "")  # (id, content) of the last acknowledged write to an own key

    def ack(self, key: str, version: int, memory_id: str, content: str) -> None:
        with self.lock:
            self.acked[key].append((version, memory_id, content))
            if key not in SHARED_KEYS:
                self.last_own = (memory_id, content)

    def lost(self, key: str, content: str) -> None:
        with self.lock:
            self.unanswered[key].append(content)

    def count(self) -> int:
        with self.lock:
            return sum(len(acks) for acks in self.acked.values())


def _writer(url: str, mind_key: str, number: int, seed: int, ledger: Ledger, stop: threading.Event) -> None:
    chooser = random.Random(seed * 100 + number)
    session = requests.Session()
    written = 0
    while not stop.is_set():
        shared = chooser.random() < SHARED_SHARE
        key = chooser.choice(SHARED_KEYS) if shared else f"w{number}_{written}"
        content = f"writer {number} write {written}"
        written += 1
        try:
            answer = session.post(
                f"{url}/memory",
                json=memory_body(key=key, content=content),
                headers={"Authorization": f"Bearer {mind_key}"},
                timeout=30,
            )
        except requests.RequestException:
            ledger.lost(key, content)
            return  # the runner is gone
        if answer.status_code in {200, 201}:
            body = answer.json()
            ledger.ack(key, body["version"], body["id"], content)
        else:
            ledger.lost(key, content)  # a 5xx may still have been applied


def _group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) of a process group, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _java_children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if ppid == pid and b"DynamoDBLocal.jar" in command:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _list_memories(http: Http, mind_key: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = http.call("GET", "/memory", token=mind_key, params=params)
        assert page.status_code == 200, page.text
        for memory in page.json()["memories"]:
            assert memory["key"] not in found, f"key {memory['key']} listed twice"
            found[memory["key"]] = memory
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return found


def _check(ledger: Ledger, listed: dict[str, dict[str, Any]]) -> None:
    for key, acks in ledger.acked.items():
        versions = [version for version, _, _ in acks]
        assert len(set(versions)) == len(versions), f"{key}: two answers gave one version: {sorted(versions)}"
        newest, memory_id, content = max(acks)
        assert key in listed, f"{key}: acknowledged (version {newest}) but gone after the crash"
        memory = listed[key]
        assert memory["id"] == memory_id, key
        later = ledger.unanswered.get(key, [])
        if memory["version"] == newest:
            assert memory["content"] == content, f"{key}: version {newest} holds other content"
        else:
            assert newest < memory["version"] <= newest + len(later), (
                f"{key}: version {memory['version']} after acknowledged {newest} "
                f"with {len(later)} unanswered writes"
            )
            assert memory["content"] in later, f"{key}: content from no write that was sent"
    for key in listed.keys() - ledger.acked.keys():
        assert key in ledger.unanswered, f"{key}: listed, but never written"


def _kill_during_writes(service: RunningService, mind_key: str, seed: int) -> Ledger:
    chooser = random.Random(seed)
    ledger, stop = Ledger(), threading.Event()
    writers = [
        threading.Thread(target=_writer, args=(service.url, mind_key, n, seed, ledger, stop), daemon=True)
        for n in range(WRITERS)
    ]
    java = _java_children(service.process.pid)
    assert java, "the runner has no DynamoDB Local child"
    for writer in writers:
        writer.start()
    deadline = time.monotonic() + 60
    kill_after = chooser.randint(20, 400)  # acknowledged writes: a random moment, never before any
    while ledger.count() < kill_after and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(chooser.random() * 0.05)
    os.killpg(service.process.pid, signal.SIGKILL)
    service.process.wait()
    stop.set()
    for writer in writers:
        writer.join(timeout=60)
    # No process of the group survives, java included.
    deadline = time.monotonic() + 10
    while (_group_members(service.process.pid) or any(map(_alive, java))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _group_members(service.process.pid) == []
    assert not any(map(_alive, java)), "DynamoDB Local outlived the runner"
    return ledger


def test_no_acknowledged_write_is_lost_when_the_process_group_is_killed(tmp_path: Path) -> None:
    seed = int(os.environ.get("DURABILITY_SEED") or random.SystemRandom().randrange(1 << 30))
    print(f"DURABILITY_SEED={seed}")
    # Given a runner on DynamoDB Local with a mind, and writers racing on it
    data_dir = tmp_path / "data"
    first = start_runner(data_dir, tmp_path / "first.log", env=DYNAMODB_LOCAL)
    assert first.store.startswith("DynamoDB Local"), first.output()
    mind = Http(first.url).create_mind(first.jwt)

    # When its whole process group is killed with SIGKILL at a random moment while they write
    ledger = _kill_during_writes(first, mind.key, seed)
    first.crash()  # closes the log; the group is gone already
    assert ledger.count() > 0

    # Then a new runner on the same data dir has every acknowledged write, at its acknowledged version
    second = start_runner(data_dir, tmp_path / "second.log", env=DYNAMODB_LOCAL)
    try:
        http = Http(second.url)
        listed = _list_memories(http, mind.key)
        _check(ledger, listed)
        # And the mind's memory_count is the number of memories listed
        counted = http.call("GET", f"/minds/{mind.id}", token=mind.jwt)
        assert counted.status_code == 200, counted.text
        assert counted.json()["memory_count"] == len(listed)
        # And the last write answered before the kill reads back by its id
        last_id, last_content = ledger.last_own
        assert last_id, "no write to a key of a writer's own was acknowledged"
        read = http.call("GET", f"/memory/{last_id}", token=mind.key)
        assert read.status_code == 200, read.text
        assert read.json()["content"] == last_content
    finally:
        assert second.stop() == 0, second.output()
