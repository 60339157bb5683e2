"""Runs of a runs folder (``pipeline/runs.py``): the one resolver of 'latest', list filters, status."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.pipeline.runs import (
    becomes_latest,
    effective_status,
    latest_run,
    list_runs,
    resolve_run_id,
    run_status,
)
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.layout import PHASES, RunLayout

OLDEST, OLD, NEW, NEWEST = (f"01a230de-0000-7000-8000-00000000000{n}" for n in range(1, 5))


def _make(runs: Path, run_id: str, status: str, created_at: str) -> RunLayout:
    layout = RunLayout(runs / run_id)
    config = PipelineConfig.model_validate({"connect": {"sources": [{"type": "folder", "path": str(runs)}]}})
    RunSession.create(layout, config)
    with RunSession.open(layout) as session:
        session.manifest.status = status  # type: ignore[assignment]
        session.manifest.created_at = created_at
        session.commit()
    return layout


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    _make(folder, OLDEST, "completed", "2026-11-01T00:00:00.000Z")
    _make(folder, OLD, "partial", "2026-11-02T00:00:00.000Z")
    _make(folder, NEW, "failed", "2026-11-03T00:00:00.000Z")
    _make(folder, NEWEST, "running", "2026-11-04T00:00:00.000Z")
    (folder / ".cache").mkdir()
    (folder / "not-a-run").mkdir()
    return folder


def test_latest_is_the_newest_completed_or_partial_run_and_other_ids_pass_through(runs: Path):
    assert resolve_run_id(runs, "latest") == OLD
    assert resolve_run_id(runs, NEW) == NEW
    assert resolve_run_id(runs, "anything-else") == "anything-else"
    assert latest_run(runs, completed_only=False) == NEWEST


def test_latest_without_a_completed_run_is_run_not_found(tmp_path: Path):
    folder = tmp_path / "runs"
    _make(folder, NEW, "failed", "2026-11-03T00:00:00.000Z")
    for runs_dir in (folder, tmp_path / "missing"):
        with pytest.raises(IndexFoundryError) as error:
            resolve_run_id(runs_dir, "latest")
        assert error.value.code == "RUN_NOT_FOUND"


def test_a_running_run_whose_process_is_gone_reads_as_failed_in_its_phase(runs: Path):
    layout = RunLayout(runs / NEWEST)
    assert effective_status(layout)[0] == "failed"
    with RunSession.open(layout):  # the lock held: the run is alive
        assert effective_status(layout) == ("running", None)
    status = run_status(layout)
    assert status.status == "failed"
    assert set(status.phases) == set(PHASES)
    assert all(view.status == "pending" for view in status.phases.values())


def test_the_list_is_newest_first_skips_what_is_not_a_run_and_filters_by_status_and_time(runs: Path):
    assert [r.run_id for r in list_runs(runs)] == [NEWEST, NEW, OLD, OLDEST]
    assert [r.status for r in list_runs(runs)] == ["failed", "failed", "partial", "completed"]
    assert [r.run_id for r in list_runs(runs, status="failed")] == [NEWEST, NEW]
    assert [r.run_id for r in list_runs(runs, status="completed")] == [OLDEST]
    assert [r.run_id for r in list_runs(runs, limit=2)] == [NEWEST, NEW]
    between = list_runs(runs, after="2026-11-01T12:00:00Z", before="2026-11-03T12:00:00Z")
    assert [r.run_id for r in between] == [NEW, OLD]
    assert list_runs(runs.parent / "missing") == []


def test_a_time_filter_that_is_not_iso_8601_is_config_invalid(runs: Path):
    with pytest.raises(IndexFoundryError) as error:
        list_runs(runs, before="last tuesday")
    assert error.value.code == "CONFIG_INVALID"


def test_a_damaged_manifest_leaves_that_run_out_of_the_list(runs: Path):
    (runs / OLD / "manifest.json").write_text("{not json", encoding="utf-8")
    assert [r.run_id for r in list_runs(runs)] == [NEWEST, NEW, OLDEST]
    assert resolve_run_id(runs, "latest") == OLDEST


def test_a_rerun_of_an_older_run_never_takes_latest_back(runs: Path):
    assert becomes_latest(runs, OLD) is True  # nothing completed after it
    assert becomes_latest(runs, OLDEST) is False  # OLD completed after it
    assert becomes_latest(runs, NEWEST) is True
