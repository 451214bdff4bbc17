"""The orphan sweep (issue 23): deleted minds' index folders found from DynamoDB's deletion markers
without listing EFS, a run out of time resuming where it stopped, a bounded background pass over
the folders for markers that were lost, and a live mind's index never touched."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from synapse.index import index_drops, orphans
from synapse.storage import tables

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.integration.test_template import _dynamodb_calls, _not_granted
from tests.support import metrics as emitted
from tests.support.api import Api
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.orphans import TimeRunsOut, gone_mind, index_folder, live_mind
from tests.support.settings import configure_fixture as configure_fixture

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def no_listing(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Listing the index root fails the test (removing one mind's folder may still scan that folder)."""
    scandir, iterdir = os.scandir, Path.iterdir

    def guarded_scandir(path: Any = ".") -> Any:
        if isinstance(path, (str, os.PathLike)) and Path(path) == root:
            raise AssertionError("the sweep listed the index folders")
        return scandir(path)

    def guarded_iterdir(self: Path) -> Any:
        if self == root:
            raise AssertionError("the sweep listed the index folders")
        return iterdir(self)

    monkeypatch.setattr(os, "scandir", guarded_scandir)
    monkeypatch.setattr(Path, "iterdir", guarded_iterdir)


def test_deleted_minds_are_found_from_their_markers_without_listing_the_folders(
    api: Api, index_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given three minds with index folders, two of them deleted through the API
    minds = [api.create_mind(f"user-{n}") for n in range(3)]
    for mind in minds:
        index_folder(index_root, mind.id)
    for mind in minds[:2]:
        assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When the sweep runs its marker part only, with listing the index root forbidden
    with monkeypatch.context() as patched:
        no_listing(patched, index_root)
        swept = orphans.sweep(folders=0)
    # Then exactly the deleted minds' folders are gone, found from their two markers
    assert sorted(swept.removed) == sorted(m.id for m in minds[:2])
    assert (swept.markers_read, swept.folders_listed, swept.markers_caught_up) == (2, 0, True)
    assert [p.name for p in index_root.iterdir()] == [minds[2].id]
    # And the next run reads no marker again
    assert orphans.sweep(folders=0).markers_read == 0


def test_a_marker_of_a_live_mind_leaves_its_index_alone(dynamo: Any, index_root: Path) -> None:
    # Given a live mind with an index, and a marker naming it (a bug, or a mind id reused)
    mind_id = live_mind(dynamo, index_root)
    index_drops.record(mind_id, NOW)
    # When the sweep runs, markers and background pass
    swept = orphans.sweep(at=NOW)
    # Then its index is untouched
    assert swept.removed == [] and swept.markers_read == 1 and swept.folders_checked == 1
    assert (index_root / mind_id / "gen-000001.sqlite").read_bytes() == b"index"


def test_a_sweep_out_of_time_resumes_where_it_stopped(dynamo: Any, index_root: Path) -> None:
    # Given 230 deleted minds over three days (beyond one query page per shard on some), each with a folder
    gone = [gone_mind(index_root) for _ in range(230)]
    for n, mind_id in enumerate(gone):
        index_drops.record(mind_id, NOW - timedelta(days=n % 3, hours=1))
    kept = live_mind(dynamo, index_root)
    # When a run runs out of time part way
    first = orphans.sweep(out_of_time=TimeRunsOut(120), folders=0, at=NOW)
    assert not first.markers_caught_up and 0 < len(first.removed) < len(gone)
    # Then the next run takes up from the cursor: every marker handled once, none read from the top
    second = orphans.sweep(folders=0, at=NOW + timedelta(minutes=1))
    assert second.markers_caught_up
    assert sorted(first.removed + second.removed) == sorted(gone)
    assert second.markers_read == len(gone) - len(first.removed)
    assert [p.name for p in index_root.iterdir()] == [kept]


def test_a_run_out_of_time_between_batches_loses_no_marker(dynamo: Any, index_root: Path) -> None:
    # Given 120 deleted minds, in every shard of one day
    gone = [gone_mind(index_root) for _ in range(120)]
    for mind_id in gone:
        index_drops.record(mind_id, NOW)
    # When runs that each get only a few steps follow one another until caught up
    removed: list[str] = []
    for run in range(100):
        swept = orphans.sweep(out_of_time=TimeRunsOut(7), folders=0, at=NOW + timedelta(minutes=run))
        removed += swept.removed
        if swept.markers_caught_up:
            break
    # Then every folder went, each exactly once
    assert sorted(removed) == sorted(gone) and not any(index_root.iterdir())


def test_a_marker_committed_just_before_midnight_is_seen_the_next_day(dynamo: Any, index_root: Path) -> None:
    # Given a run late on a day, then a deletion recorded a moment later the same day
    evening = datetime(2026, 12, 1, 23, 59, 58, tzinfo=UTC)
    orphans.sweep(folders=0, at=evening)
    late = gone_mind(index_root)
    index_drops.record(late, evening + timedelta(seconds=1))
    # When the next run starts after midnight
    swept = orphans.sweep(folders=0, at=evening + timedelta(minutes=30))
    # Then it still reads that day and removes the folder
    assert swept.removed == [late]
    # And once the day has ended an hour ago, the cursor moves past it
    orphans.sweep(folders=0, at=evening + timedelta(hours=3))
    state = tables.get(tables.minds_table(), orphans.MARKERS_STATE)
    assert state is not None and state["day"] == "2026-12-02" and not state["after"]


def test_the_background_pass_checks_n_folders_per_run_from_its_cursor(dynamo: Any, index_root: Path) -> None:
    # Given ten index folders without markers: seven of deleted minds, three live
    gone = [gone_mind(index_root) for _ in range(7)]
    live = [live_mind(dynamo, index_root) for _ in range(3)]
    in_order = sorted(gone + live)
    # When the background pass runs four folders at a time
    runs = [orphans.sweep(folders=4, at=NOW + timedelta(days=d)) for d in range(3)]
    # Then each run checks the next four names after its cursor, the third the last two and wraps
    assert [r.folders_checked for r in runs] == [4, 4, 2]
    assert [sorted(r.removed) for r in runs] == [
        sorted(set(in_order[a:b]) & set(gone)) for a, b in [(0, 4), (4, 8), (8, 10)]
    ]
    assert [r.background_passes for r in runs] == [0, 0, 1]
    # And only the live minds' folders are left, untouched
    assert sorted(p.name for p in index_root.iterdir()) == sorted(live)
    assert all((index_root / m / "gen-000001.sqlite").read_bytes() == b"index" for m in live)
    # And the next run starts from the first folder again
    assert orphans.sweep(folders=2, at=NOW + timedelta(days=4)).folders_checked == 2
    state = tables.get(tables.minds_table(), orphans.FOLDERS_STATE)
    assert state is not None and state["after"] == sorted(live)[1]


def test_the_background_pass_out_of_time_keeps_its_cursor(dynamo: Any, index_root: Path) -> None:
    # Given 250 folders of deleted minds (three check batches) and no marker
    gone = sorted(gone_mind(index_root) for _ in range(250))
    # When a run may check only two batches
    first = orphans.sweep(out_of_time=TimeRunsOut(3), folders=1000, at=NOW)
    # Then the next one goes on after the last folder checked
    second = orphans.sweep(folders=1000, at=NOW + timedelta(days=1))
    assert (first.folders_checked, second.folders_checked) == (200, 50)
    assert first.removed + sorted(second.removed) == gone[:200] + gone[200:]


def test_the_scheduled_sweep_stays_within_the_rebuild_functions_policy(api: Api, index_root: Path) -> None:
    # Given a deleted mind with an index folder
    mind = api.create_mind()
    index_folder(index_root, mind.id)
    assert api.call("DELETE", f"/minds/{mind.id}", token=mind.jwt).status == 204
    # When EventBridge's daily event reaches the rebuild function
    handler = load_handler(template.ROOT / "functions" / "rebuild_index", "app.handler")
    with _dynamodb_calls() as needs:
        answer = handler({"sweep": True}, LambdaContext("rebuild"))
    # Then it removed the folder, using only what its policy grants
    assert answer["status"] == "swept" and answer["removed"] == [mind.id]
    assert _not_granted("RebuildIndexFunction", needs) == []


# ---------------------------------------------------------------- how far behind: the lag it reports


def test_a_run_that_catches_up_reports_no_lag(dynamo: Any, index_root: Path) -> None:
    # Given deletions on each of the last three days
    for n in range(3):
        index_drops.record(gone_mind(index_root), NOW - timedelta(days=n))
    # When the daily sweep runs, and the next day again
    runs = [orphans.sweep(folders=0, at=NOW + timedelta(days=d)) for d in range(2)]
    # Then each caught up with the markers and reports no lag
    assert [(r.markers_caught_up, r.lag_seconds) for r in runs] == [(True, 0), (True, 0)]


def test_a_run_out_of_time_reports_the_age_of_the_day_it_stopped_in(dynamo: Any, index_root: Path) -> None:
    # Given a sweep whose cursor is three days back, with a marker of that day still to handle
    behind = NOW - timedelta(days=3)
    index_drops.record(gone_mind(index_root), behind)
    orphans._save(orphans.MARKERS_STATE, {"day": index_drops.day_of(behind), "after": {}}, behind)
    # When a run runs out of time before handling it
    swept = orphans.sweep(out_of_time=TimeRunsOut(0), folders=0, at=NOW)
    # Then it reports how old that day is: 3 days and 12 hours, over the alarm's 2 days
    assert not swept.markers_caught_up
    assert swept.lag_seconds == int((NOW - orphans._start_of(index_drops.day_of(behind))).total_seconds())
    assert swept.lag_seconds == (3 * 24 + 12) * 3600 > 2 * 24 * 3600
    # And the run that catches up reports none
    assert orphans.sweep(folders=0, at=NOW + timedelta(minutes=1)).lag_seconds == 0


def test_the_scheduled_sweep_writes_its_lag_and_a_rebuild_writes_none(
    api: Api, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the rebuild function, and a mind to rebuild
    handler = load_handler(template.ROOT / "functions" / "rebuild_index", "app.handler")
    mind = api.create_mind()
    capsys.readouterr()
    # When the daily sweep runs, then a rebuild
    handler({"sweep": True}, LambdaContext("rebuild"))
    swept = emitted.values(capsys.readouterr().out)
    handler({"mind_id": mind.id}, LambdaContext("rebuild"))
    rebuilt = emitted.values(capsys.readouterr().out)
    # Then the sweep wrote its lag (caught up: 0), and the rebuild no metric of the sweep
    assert swept[orphans.LAG_METRIC] == [0]
    assert orphans.LAG_METRIC not in rebuilt
