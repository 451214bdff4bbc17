"""Data lives in SYNAPSE_DATA_DIR and survives a clean stop and a restart, on moto too (saved on the
stop), and one runner at a time uses a data dir.

On the default store, a clean stop and restart keeping a mind, its memories and its Mind Key is
checked by test_demo.py's restart (one pair of starts for the demo, the data and the webhooks), and
a write answered 2xx surviving a crash right after it by test_durability.py (a kill of the process
group under racing writers: the last write answered before it reads back by its id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Http
from tests.support.api import memory_body
from tests.support.runner import DYNAMODB_LOCAL, RunningService, dynamodb_local_missing, start_runner


def test_moto_fallback_saves_on_a_clean_stop_and_warns_about_crashes(tmp_path: Path) -> None:
    # Given no java on PATH (the runner's python is started by its full path) and no store asked for
    data_dir = tmp_path / "data"
    no_java = {"PATH": str(tmp_path / "empty-bin"), "SYNAPSE_LOCAL_STORE": ""}
    first = start_runner(data_dir, tmp_path / "first.log", env=no_java)
    try:
        # Then it falls back to moto, and says why and that a crash loses the most recent writes
        assert first.store.startswith("embedded moto"), first.output()
        assert "java is not on PATH" in first.output()
        assert "a crash or kill -9 loses the most recent writes" in first.output()
        # And it serves: a mind and a memory are written, then it is stopped with SIGTERM
        http = Http(first.url)
        mind = http.create_mind(first.jwt, name="Kept Mind")
        stored = http.call(
            "POST", "/memory", token=mind.key, json_body=memory_body(content="Snap", tags=["Durable"])
        )
        assert stored.status_code == 201, stored.text
    finally:
        assert first.stop() == 0, first.output()
    assert (data_dir / "dynamodb.json").exists()

    # When a runner told to use moto (java or not) runs on that data dir
    second = start_runner(data_dir, tmp_path / "second.log", env={"SYNAPSE_LOCAL_STORE": "moto"})
    try:
        assert second.store.startswith("embedded moto"), second.output()
        assert "a crash or kill -9 loses the most recent writes" in second.output()
        # Then the memory reads back as it was, through the same Mind Key, and the mind is the user's
        http = Http(second.url)
        read = http.call("GET", f"/memory/{stored.json()['id']}", token=mind.key)
        assert read.status_code == 200, read.text
        assert read.json() == stored.json()
        minds = http.call("GET", "/minds", token=second.jwt)
        assert [m["name"] for m in minds.json()["minds"]] == ["Kept Mind"]
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
