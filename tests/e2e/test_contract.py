"""Contract fuzzing: schemathesis generates requests for every operation of the served OpenAPI document
(`GET /openapi.json`) and sends them to a real `make run`, checking that nothing is a server error and
that every status code, content type and body is one the document promises, and that every request
the document calls valid is accepted (`ACCEPTED`).

The run carries real credentials (a JWT and a Mind Key, per operation, see contract_hooks.py) and ids
seeded here, so requests reach the handlers' logic. A failure is a bug in the service or a schema
that does not tell the truth: fix that, never exclude the operation or the check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.runner import ROOT, RunningService, start_runner

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        # A request the document calls valid is accepted: nothing but what depends on the service's
        # state (a 404 for an id, a 409 for a limit or a busy item, a 412 for a stale version; a 304 is
        # the console's "you have it") may refuse it.
        "positive_data_acceptance",
    ]
)
ACCEPTED = ["2xx", "304", "404", "409", "412"]
# MCP's Streamable HTTP has a client GET /mcp for a server stream and DELETE it to end a session; a
# stateless server's answer to both is the protocol's own 405, whatever the request.
CONFIG = f"""
[checks.positive_data_acceptance]
expected-statuses = {json.dumps(ACCEPTED)}

[[operations]]
include-name = ["GET /mcp", "DELETE /mcp"]
checks.positive_data_acceptance.expected-statuses = ["405"]
"""
# Per operation, per phase: bounded so the whole run stays well under three minutes on two cores.
MAX_EXAMPLES = 10
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    base = tmp_path_factory.mktemp("contract")
    # Loopback webhook receivers allowed, so the seeded webhook can exist on this machine; a start-up
    # slower than the default allows, as on a loaded CI machine, is not a contract failure.
    loopback = {"SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK": "true"}
    running = start_runner(base / "data", base / "runner.log", env=loopback, timeout=120)
    yield running
    running.stop()


def _post(service: RunningService, path: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    answer = requests.post(
        service.url + path,
        json=body,
        headers={"Authorization": f"Bearer {service.jwt}", **headers},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def seed(service: RunningService) -> dict[str, str]:
    """A mind with a memory, a proposal, keys, hooks and webhooks; a spare of each for the destructive
    operations."""
    mind = _post(service, "/minds", {"name": "Contract"})
    spare_mind = _post(service, "/minds", {"name": "Spare"})
    mind_id = mind["mind"]["id"]
    memories = [
        _post(
            service,
            "/memory",
            {"category": "fact", "key": key, "content": "Lives in Berlin"},
            **{"X-Mind-Id": mind_id},
        )
        for key in ("home_city", "spare_fact")
    ]
    hooks = [
        _post(service, f"/minds/{mind_id}/hooks", {"label": label}) for label in ("live", "spare", "rotated")
    ]
    # The Mind Key changing the owner's (verified) memory proposes the change.
    proposed = requests.post(
        service.url + "/memory",
        json={"category": "fact", "key": "home_city", "content": "Lives in Hamburg"},
        headers={"Authorization": f"Bearer {mind['mind_key']['key']}"},
        timeout=30,
    )
    assert proposed.status_code == 202, proposed.text
    webhook = {"url": "http://127.0.0.1:9/events", "events": ["memory.created"]}
    webhooks = [_post(service, f"/minds/{mind_id}/webhooks", webhook) for _ in range(2)]
    return {
        "url": service.url,
        "jwt": service.jwt,
        "mind": mind_id,
        "mind_key": mind["mind_key"]["key"],
        "spare_mind": spare_mind["mind"]["id"],
        "spare_key": _post(service, f"/minds/{mind_id}/keys", {"label": "spare"})["id"],
        "memory": memories[0]["id"],
        "memory_category": memories[0]["category"],
        "memory_key": memories[0]["key"],
        "spare_memory": memories[1]["id"],
        "proposal": proposed.json()["proposal"]["id"],
        "hook": hooks[0]["id"],
        "hook_secret": hooks[0]["secret"],
        "spare_hook": hooks[1]["id"],
        "rotated_hook": hooks[2]["id"],
        "webhook": webhooks[0]["id"],
        "spare_webhook": webhooks[1]["id"],
    }


def test_every_operation_keeps_its_contract_under_generated_requests(
    service: RunningService, tmp_path: Path
) -> None:
    # Given a seeded mind and the document the service serves
    seeded = seed(service)
    # When schemathesis fuzzes every operation with the right credentials
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "layers" / "synapse")]),
        "SCHEMATHESIS_HOOKS": "tests.e2e.contract_hooks",
        "SYNAPSE_CONTRACT": json.dumps(seeded),
    }
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [str(SCHEMATHESIS), "--config-file", str(config), "run", f"{service.url}/openapi.json"]
    command += ["--checks", CHECKS]
    command += ["--max-examples", str(MAX_EXAMPLES), "--seed", "1", "--workers", "2", "--no-shrink"]
    command += ["--suppress-health-check", "all"]
    result = subprocess.run(  # noqa: S603 - our own virtualenv's schemathesis
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600, check=False
    )
    # Then no check failed, and no request made the service answer 5xx
    report = result.stdout[-12_000:] + result.stderr[-4_000:]
    assert result.returncode == 0, report
    assert "Tested:" in result.stdout and "passed" in result.stdout, report
    assert service.server_errors() == [], service.output()[-8_000:]
