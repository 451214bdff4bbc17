"""Data lives in SYNAPSE_DATA_DIR and survives a clean stop, a restart and (on DynamoDB Local) a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import DYNAMODB_LOCAL, RunningService, dynamodb_local_missing, start_runner

needs_dynamodb_local = pytest.mark.skipif(bool(dynamodb_local_missing()), reason=dynamodb_local_missing())


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


@needs_dynamodb_local
def test_a_write_answered_2xx_survives_a_crash_right_after_it(tmp_path: Path) -> None:
    # Given a runner on its default store (DynamoDB Local) that answered a store with 201
    data_dir = tmp_path / "data"
    first = start_runner(data_dir, tmp_path / "first.log", env=DYNAMODB_LOCAL)
    assert first.store.startswith("DynamoDB Local"), first.output()
    try:
        http = Http(first.url)
        mind = http.create_mind(first.jwt)
        stored = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Saved"))
        assert stored.status_code == 201, stored.text
    finally:
        # When its process group is killed at once, with no time to save anything
        first.crash()

    # Then a new runner on the same data dir has the memory, and the mind counts it
    second = start_runner(data_dir, tmp_path / "second.log", env=DYNAMODB_LOCAL)
    try:
        http = Http(second.url)
        read = http.call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
        assert read.json()["content"] == "Saved"
        assert http.call("GET", f"/minds/{mind.id}", token=mind.jwt).json()["memory_count"] == 1
    finally:
        assert second.stop() == 0, second.output()


def test_moto_fallback_saves_on_a_clean_stop_and_warns_about_crashes(tmp_path: Path) -> None:
    # Given a runner told to use moto, where a memory was written, then stopped with SIGTERM
    data_dir = tmp_path / "data"
    first = start_runner(data_dir, tmp_path / "first.log", env={"SYNAPSE_LOCAL_STORE": "moto"})
    try:
        assert first.store.startswith("embedded moto"), first.output()
        assert "a crash or kill -9 loses the most recent writes" in first.output()
        http = Http(first.url)
        mind = http.create_mind(first.jwt)
        stored = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="Snap"))
        assert stored.status_code == 201, stored.text
    finally:
        assert first.stop() == 0, first.output()
    assert (data_dir / "dynamodb.json").exists()

    # When moto runs again on that data dir, the memory is there
    second = start_runner(data_dir, tmp_path / "second.log", env={"SYNAPSE_LOCAL_STORE": "moto"})
    try:
        read = Http(second.url).call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
    finally:
        assert second.stop() == 0, second.output()

    if dynamodb_local_missing():
        return
    # And when the default store (DynamoDB Local) first starts there, it imports moto's snapshot once
    third = start_runner(data_dir, tmp_path / "third.log", env=DYNAMODB_LOCAL)
    try:
        assert "Imported" in third.output(), third.output()
        read = Http(third.url).call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
    finally:
        assert third.stop() == 0, third.output()
    assert not (data_dir / "dynamodb.json").exists()
    assert (data_dir / "dynamodb.json.imported").exists()


def test_a_second_runner_on_the_same_data_dir_refuses_to_start(
    runner: RunningService, tmp_path: Path
) -> None:
    # Given a running runner; when another one starts on its data dir
    with pytest.raises(RuntimeError, match="another runner is using") as refused:
        start_runner(runner.data_dir, tmp_path / "second.log")
    # Then it exits with an error instead of overwriting the first one's snapshot
    assert "exited with 2" in str(refused.value)
    assert Http(runner.url).call("GET", "/memory").status_code == 401  # the first one still serves
