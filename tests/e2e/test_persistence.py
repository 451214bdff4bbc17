"""Data lives in SYNAPSE_DATA_DIR and survives a clean stop and a restart of the runner."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import RunningService, start_runner


def test_data_survives_a_clean_stop_and_restart(tmp_path: Path) -> None:
    # Given a runner where a mind and a memory were written, then stopped with SIGTERM
    data_dir = tmp_path / "data"
    first = start_runner(data_dir, tmp_path / "first.log")
    try:
        http = Http(first.url)
        mind = http.create_mind(first.jwt, name="Kept Mind")
        stored = http.call(
            "POST", "/memory", token=mind.key, json_body=memory_body(content="Kept", tags=["Durable"])
        )
        assert stored.status_code == 201, stored.text
    finally:
        assert first.stop() == 0, first.output()

    # When a new runner starts on the same data dir
    second = start_runner(data_dir, tmp_path / "second.log")
    try:
        http = Http(second.url)
        # Then the memory reads back as it was, through the same Mind Key
        read = http.call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
        assert read.json() == stored.json()
        # And the mind is still the user's, and writes keep counting versions
        minds = http.call("GET", "/minds", token=second.jwt)
        assert [m["name"] for m in minds.json()["minds"]] == ["Kept Mind"]
        again = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Kept again"))
        assert (again.status_code, again.json()["version"]) == (200, 2)
    finally:
        assert second.stop() == 0, second.output()


def test_writes_are_saved_while_running_so_a_crash_keeps_them(tmp_path: Path) -> None:
    # Given a runner that stored a memory and has since saved its periodic snapshot
    data_dir = tmp_path / "data"
    first = start_runner(data_dir, tmp_path / "first.log")
    try:
        http = Http(first.url)
        mind = http.create_mind(first.jwt)
        stored = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Saved"))
        assert stored.status_code == 201, stored.text
        snapshot = data_dir / "dynamodb.json"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
            snapshot.exists() and stored.json()["id"] in snapshot.read_text()
        ):
            time.sleep(0.1)
    finally:
        # When it dies without a clean stop
        first.crash()

    # Then a new runner on the same data dir still has the memory
    second = start_runner(data_dir, tmp_path / "second.log")
    try:
        read = Http(second.url).call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
        assert read.json()["content"] == "Saved"
    finally:
        assert second.stop() == 0, second.output()


def test_a_second_runner_on_the_same_data_dir_refuses_to_start(
    runner: RunningService, tmp_path: Path
) -> None:
    # Given a running runner; when another one starts on its data dir
    with pytest.raises(RuntimeError, match="another runner is using") as refused:
        start_runner(runner.data_dir, tmp_path / "second.log")
    # Then it exits with an error instead of overwriting the first one's snapshot
    assert "exited with 2" in str(refused.value)
    assert Http(runner.url).call("GET", "/memory").status_code == 401  # the first one still serves
