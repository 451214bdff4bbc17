"""make run runs the template's scheduled functions: the expiry sweep takes an expired memory out of
the read indexes in a running runner (seen from outside through by-tag's include_expired order)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.e2e.conftest import Http
from tests.support.runner import SharedStore, start_runner


def test_the_runner_sweeps_expired_memories_on_its_schedule(
    tmp_path: Path, shared_store: SharedStore
) -> None:
    # Given a runner whose scheduled functions run every second (its tables in the shared store)
    settings = shared_store.env("expiry") | {"SYNAPSE_LOCAL_SCHEDULE_SECONDS": "1"}
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env=settings)
    try:
        http = Http(service.url)
        mind = http.create_mind(service.jwt)
        # And a live memory, then a newer one tagged alike that expires in a moment
        soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
        for key, extra in (("live", {}), ("short_lived", {"expires_at": soon})):
            body = {"category": "context", "key": key, "content": key, "tags": ["trip"], **extra}
            assert http.call("POST", "/memory", token=mind.key, json_body=body).status_code == 201

        def listed() -> list[str]:
            answer = http.call(
                "GET", "/memory/by-tag", token=mind.key, params={"tag": "trip", "include_expired": "true"}
            )
            assert answer.status_code == 200, answer.text
            return [m["key"] for m in answer.json()["memories"]]

        # Then the expired one, newer and so listed first until swept, moves behind the live one
        deadline = time.monotonic() + 60
        while listed() != ["live", "short_lived"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert listed() == ["live", "short_lived"], service.output()[-3000:]
        # And recall leaves it out, counting the live one only
        recall = http.call("GET", "/memory/recall", token=mind.key, params={"format": "json"}).json()
        assert (recall["total"], [m["key"] for m in recall["memories"]]) == (1, ["live"])
    finally:
        assert service.stop() == 0, service.output()
