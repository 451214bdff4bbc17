"""`synapse backup` of a mind with every kind of state and `synapse restore` of the file into a new
mind, end to end against `make run`'s stack: the copy equals the source as the API shows it, a
second restore changes nothing, and a changed file is refused naming its line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from synapse_client.backup import check

from tests.clients.conftest import run_cli
from tests.support import backups
from tests.support.api import MindHandle
from tests.support.checks import as_user, ok
from tests.support.runner import RunningService


def test_backup_and_restore_through_the_cli_reproduce_the_mind(
    runner: RunningService, tmp_path: Path
) -> None:
    # Given a mind on the local stack with every kind of state
    api = backups.HttpApi(runner.url, runner.jwt)
    mind, ids = backups.rich_mind(api)
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_TOKEN": runner.jwt}
    # When `synapse backup` writes it to a file
    path = tmp_path / "mind.backup.jsonl"
    done = run_cli("backup", "--mind", mind.id, "-o", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert "backed up 35 lines" in done.stderr and not Path(f"{path}.part").exists()
    # And `synapse restore` puts the file into a new mind
    done = run_cli("restore", str(path), "--new-mind", "Restored", env=env)
    assert done.returncode == 0, done.stderr
    found = re.search(
        r"created mind (m_\S+) \(Restored\); its Mind Key \(shown once, keep it\): (mk_\S+)", done.stderr
    )
    assert found, done.stderr
    target = MindHandle(found[1], runner.jwt, found[2], "")
    # And it says what it restored apart from what the backup only lists (not recreated)
    restored, listed = done.stdout.splitlines()
    assert restored.endswith(
        ": 5 memories, 17 revisions, 1 deleted memory, 5 proposals, the mind's settings (ids kept)"
    ), restored
    assert listed.startswith("listed in the backup, not recreated: 2 keys, 1 hook, 1 member ("), listed
    # And the new mind's own key, shown once, is its one key, and it works
    keys = ok(api.call("GET", f"/minds/{target.id}/keys", token=runner.jwt))["keys"]
    assert [key["label"] for key in keys] == ["default"] and found[2].startswith(keys[0]["prefix"])
    assert ok(api.call("GET", "/memory", token=target.key))["memories"]
    assert done.stderr.count(found[2]) == 1 and found[2] not in done.stdout
    # And with --json the answer holds the same split and the new mind's key (then not on stderr)
    as_json = run_cli("--json", "restore", str(path), "--new-mind", "As JSON", env=env)
    answer = json.loads(as_json.stdout)
    assert answer["restored"]["memory"] == 5 and answer["listed"] == {"key": 2, "hook": 1, "member": 1}
    assert answer["mind_key"]["key"].startswith("mk_") and answer["mind_key"]["key"] not in as_json.stderr
    # Then the copy shows what the source shows, field by field (the mind id aside)
    assert backups.seen(api, target, ids) == backups.seen(api, mind, ids)
    # And its memories are found by search once the indexer has them
    query = {"q": "oolong"}
    for _ in range(100):
        hits = ok(api.call("GET", "/memory/search", query=query, **as_user(target)))["results"]
        if hits:
            break
        time.sleep(0.1)
    assert hits[0]["memory"]["id"] == ids["vouched"]  # first: others may follow by meaning
    # And restoring the file again changes nothing
    again = run_cli("restore", str(path), "--mind", target.id, env=env)
    assert again.returncode == 0, again.stderr
    assert ok(api.call("GET", f"/minds/{target.id}", token=runner.jwt))["memory_count"] == 5
    # And a changed file is refused before anything is sent, naming the line
    lines = path.read_bytes().splitlines()
    lines[9] = lines[9].replace(b"oolong", b"sencha")
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b"".join(line + b"\n" for line in lines))
    refused = run_cli("restore", str(changed), "--new-mind", "Never", env=env)
    assert refused.returncode == 1 and "line 10:" in refused.stderr, refused.stderr
    # And a restore stopped part-way goes on where it stopped when `synapse restore` runs again
    partial = api.create_mind(name="Partial")
    first = ok(backups.send(api, partial, path.read_bytes().splitlines()[:12]))
    assert (first["status"], first["next_line"]) == ("running", 12)
    resumed = run_cli("restore", str(path), "--mind", partial.id, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert backups.seen(api, partial, ids) == backups.seen(api, mind, ids)
    # And a backup stopped part-way goes on from its last whole page when run again
    page = api.call("GET", f"/minds/{mind.id}/backup", token=runner.jwt, query={"limit": 6})
    cut = tmp_path / "resumed.jsonl"
    Path(f"{cut}.part").write_bytes(page.body + b'{"n":7,"kind":"mem')  # cut mid-page: dropped
    saved = {"cursor": page.headers["X-Next-Cursor"], "bytes": len(page.body), "lines": 6}
    Path(f"{cut}.part.cursor").write_text(json.dumps(saved))
    done = run_cli("backup", "--mind", mind.id, "-o", str(cut), env=env)
    assert done.returncode == 0 and "going on from line 7" in done.stderr, done.stderr
    with cut.open("rb") as file, path.open("rb") as whole:
        assert check(file).counts == check(whole).counts
    assert not Path(f"{cut}.part.cursor").exists()
