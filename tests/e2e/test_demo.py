"""`make demo` (`SYNAPSE_DEMO=1`): the runner creates SPEC §4's example mind for the dev user and
prints a line to paste; its recall is SPEC §4's text and every recall output docs/api.md shows for
it; a second start finds the same mind and prints a new, working Mind Key. On the first start, left
alone until the demo is seeded, the line to paste is the last one printed, under one access line per
request (issue 21 item 9, with test_runner_logs.py).

The same pair of starts, on the default store (DynamoDB Local in CI), checks what a clean stop and
restart keep of any mind (its memories as they were, through its same Mind Key; versions go on
counting) and that a restart replays no webhook events for the memories it finds again: three
restart tests in one pair of starts, each start costing seconds."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.conftest import Http
from tests.support.api import MindHandle, memory_body
from tests.support.recall import SPEC_EXAMPLE
from tests.support.receiver import Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.runner import ACCESS_LINE, LOOPBACK, ROOT, SETTLE_SECONDS, RunningService, start_runner

# The demo, and webhooks delivered to a receiver on this machine.
DEMO = {"SYNAPSE_DEMO": "1"} | LOOPBACK
EXPORT_LINE = re.compile(r"^export BASE=(\S+) MIND_ID=(\S+) MIND_KEY=(\S+)$", re.MULTILINE)
DOC_CALL = re.compile(r'^curl -s "\$BASE(/memory/recall[^"]*)" -H "Authorization: Bearer \$MIND_KEY"$')


def demo_line(service: RunningService, after: int = 0) -> tuple[str, str]:
    """(mind id, Mind Key) from the export line the runner printed after `after` characters."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = EXPORT_LINE.search(service.output()[after:])
        if found:
            assert found.group(1) == service.url
            return found.group(2), found.group(3)
        assert "demo data not created" not in service.output(), service.output()
        time.sleep(0.2)
    raise AssertionError(f"no demo line:\n{service.output()}")


def recall(service: RunningService, key: str, path: str = "/memory/recall") -> str:
    answer = requests.get(service.url + path, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.text


def documented_recalls() -> list[tuple[str, list[str]]]:
    """(path, shown lines) of every recall call docs/api.md shows with its output (`# …` lines)."""
    shown: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in (ROOT / "docs" / "api.md").read_text(encoding="utf-8").splitlines():
        call = DOC_CALL.match(line)
        if call:
            current = []
            shown.append((call.group(1), current))
        elif current is not None and (line == "#" or line.startswith("# ")):
            current.append(line[2:])
        else:
            current = None
    return [(path, lines) for path, lines in shown if lines]


def as_pattern(lines: list[str]) -> re.Pattern[str]:
    """A shown output as a pattern: a line `…` stands for any lines, `…` inside a line for any text."""
    parts = []
    for line in lines:
        if line == "…":
            parts.append(r"(?:.*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in line.split("…")) + r"\n")
    return re.compile("".join(parts))


def keep_a_mind(service: RunningService, receiver: Receiver) -> tuple[MindHandle, dict[str, Any]]:
    """A mind of its own beside the demo's, with a webhook on `receiver` for created memories and one
    stored memory, delivered once: (the mind, the stored memory)."""
    http = Http(service.url)
    mind = http.create_mind(service.jwt, name="Kept Mind")
    body = {"url": receiver.url("/restart"), "events": ["memory.created"]}
    created = http.call("POST", f"/minds/{mind.id}/webhooks", token=mind.jwt, json_body=body)
    assert created.status_code == 201, created.text
    stored = http.call(
        "POST", "/memory", token=mind.key, json_body=memory_body(content="Kept", tags=["Durable"])
    )
    assert stored.status_code == 201, stored.text
    assert receiver.wait_for("/restart", 1, timeout=20), service.output()[-2000:]
    memory: dict[str, Any] = stored.json()
    return mind, memory


def check_the_kept_mind(
    service: RunningService, receiver: Receiver, mind: MindHandle, stored: dict[str, Any]
) -> None:
    """After the restart: the memory reads back as it was through the same Mind Key, the mind is still
    the user's, writes keep counting versions, and only a memory created now is announced."""
    http = Http(service.url)
    read = http.call("GET", f"/memory/{stored['id']}", token=mind.key)
    assert read.status_code == 200, read.text
    assert read.json() == stored
    minds = http.call("GET", "/minds", token=service.jwt)
    assert sorted(m["name"] for m in minds.json()["minds"]) == ["Kept Mind", "Michael's Mind"]
    again = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Kept again"))
    assert (again.status_code, again.json()["version"]) == (200, 2)
    later = http.call("POST", "/memory", token=mind.key, json_body=memory_body(key="later"))
    assert later.status_code == 201, later.text
    assert receiver.wait_for("/restart", 2, timeout=20), service.output()[-2000:]
    time.sleep(1.0)  # room for any replayed event to arrive too
    # Only the memory created now was announced (the update is not a created memory): what the
    # restart found again is not a write
    keys = [json.loads(r.body)["data"]["memory"]["key"] for r in receiver.got("/restart")]
    assert keys == [stored["key"], "later"]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_the_demo_mind_recalls_as_spec_and_docs_show_and_survives_a_restart(
    data_dir: Path, tmp_path: Path, receiver: Receiver
) -> None:
    # Given a first start with SYNAPSE_DEMO=1
    log = tmp_path / "runner.log"
    service = start_runner(data_dir, log, DEMO)
    try:
        mind_id, key = demo_line(service)
        # Then, once it has seeded the mind and indexed it (nothing else was asked of it), the line
        # to paste is the last one printed, after the demo's few lines
        time.sleep(SETTLE_SECONDS)
        lines = service.after_banner()
        assert EXPORT_LINE.match(lines[-1]), lines
        demo = next(i for i, line in enumerate(lines) if line.startswith("Demo mind (created; stored 12"))
        assert len(lines) - demo <= 4, lines[demo:]
        # And before them, one access line per request its seeding sent (and the start's GET /)
        assert [line for line in lines[:demo] if not ACCESS_LINE.match(line)] == []
        assert len(lines[:demo]) < 25, lines[:demo]
        # When the printed Mind Key recalls the mind
        text = recall(service, key)
        # Then it is SPEC §4's example: its header and first three entries, byte for byte
        assert text.startswith(SPEC_EXAMPLE + "\n[004] ")
        assert text.count("\n[0") == 12
        # And every recall output docs/api.md shows for it is what a paste gets
        documented = documented_recalls()
        assert len(documented) >= 2
        for path, lines in documented:
            assert as_pattern(lines).fullmatch(recall(service, key, path)), (path, lines)
        minds = requests.get(
            service.url + "/minds", headers={"Authorization": f"Bearer {service.jwt}"}, timeout=30
        ).json()["minds"]
        assert [m["id"] for m in minds if m["name"] == "Michael's Mind"] == [mind_id]
        # And (for the restart) a mind of the user's own is written, its webhook delivered once
        kept, stored = keep_a_mind(service, receiver)
    finally:
        assert service.stop() == 0, service.output()
    # When the runner is stopped cleanly and starts again on the same data
    printed = len(log.read_text(encoding="utf-8", errors="replace"))
    again = start_runner(data_dir, log, DEMO)
    try:
        same_id, new_key = demo_line(again, printed)
        # Then it found the same mind, created no second one, and the new key recalls the same text
        assert same_id == mind_id and new_key != key
        assert "Demo mind (already there)" in again.output()[printed:]
        assert recall(again, new_key) == text
        # And the mind holds one `demo` key, the new one: the earlier one no longer answers
        keys = requests.get(
            f"{again.url}/minds/{mind_id}/keys?limit=100",
            headers={"Authorization": f"Bearer {again.jwt}"},
            timeout=30,
        ).json()["keys"]
        assert [k["label"] for k in keys].count("demo") == 1
        old = requests.get(
            again.url + "/memory/recall", headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        assert old.status_code == 401
        minds = requests.get(
            again.url + "/minds", headers={"Authorization": f"Bearer {again.jwt}"}, timeout=30
        ).json()["minds"]
        assert [m["id"] for m in minds if m["name"] == "Michael's Mind"] == [mind_id]
        # And the user's own mind is as it was, and no event is replayed for it
        check_the_kept_mind(again, receiver, kept, stored)
        assert again.server_errors() == []
    finally:
        assert again.stop() == 0, again.output()
