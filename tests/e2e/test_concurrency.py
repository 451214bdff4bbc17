"""Writers racing over HTTP on one (category, key) leave one memory that counts every write."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import requests

from tests.e2e.conftest import Http
from tests.support.api import MindHandle, memory_body

WRITERS = 20


def test_twenty_concurrent_stores_of_one_key_leave_one_memory_at_version_20(
    http: Http, mind: MindHandle
) -> None:
    # Given 20 writers that start together, each with its own connection
    def store(n: int) -> int:
        answer = requests.post(
            f"{http.url}/memory",
            json=memory_body(category="project", key="shared_state", content=f"write {n}"),
            headers={"Authorization": f"Bearer {mind.key}"},
            timeout=60,
        )
        return answer.status_code

    # When they all store the same (category, key)
    with ThreadPoolExecutor(WRITERS) as pool:
        statuses = sorted(pool.map(store, range(WRITERS)))

    # Then exactly one created it and the others replaced it
    assert statuses == [200] * (WRITERS - 1) + [201]
    listed = http.call("GET", "/memory", token=mind.key, params={"category": "project"})
    assert listed.status_code == 200, listed.text
    memories = [m for m in listed.json()["memories"] if m["key"] == "shared_state"]
    assert len(memories) == 1
    assert memories[0]["version"] == WRITERS
