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
    pinned_latest,
    resolve_run_id,
    run_status,
)
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.layout import PHASES, RunLayout

OLDEST, OLD, NEW, NEWEST = (f"01a230de-0000-7000-8000-00000000000{n}" for n in range(1, 5))


def _make(runs: Path, run_id: str, status: str, created_at: str, name: str | None = None) -> RunLayout:
    layout = RunLayout(runs / run_id)
    config = PipelineConfig.model_validate(
        {"name": name, "connect": {"sources": [{"type": "folder", "path": str(runs)}]}}
    )
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


def test_latest_is_per_pipeline_and_a_bare_latest_over_two_pipelines_lists_them(runs: Path):
    other = "01a230de-0000-7000-8000-000000000005"
    _make(runs, other, "completed", "2026-11-05T00:00:00.000Z", name="papers")
    assert {r.run_id: r.pipeline for r in list_runs(runs)}[OLD] == "indexfoundry"  # the collection's name
    assert resolve_run_id(runs, "latest:indexfoundry") == OLD
    assert resolve_run_id(runs, "latest:papers") == other
    assert latest_run(runs, pipeline="papers") == other
    with pytest.raises(IndexFoundryError) as error:
        resolve_run_id(runs, "latest")
    assert error.value.code == "CONFIG_INVALID"
    assert "latest:papers or latest:indexfoundry" in (error.value.suggestion or "")
    with pytest.raises(IndexFoundryError) as error:
        pinned_latest(runs, "latest")
    assert error.value.code == "CONFIG_INVALID"
    with pytest.raises(IndexFoundryError) as error:
        resolve_run_id(runs, "latest:nope")
    assert error.value.code == "RUN_NOT_FOUND" and "indexfoundry, papers" in (error.value.suggestion or "")
    # A rerun of an older run of one pipeline: only that pipeline's runs count.
    assert becomes_latest(runs, OLD) is True


def test_a_follower_pins_the_folders_one_pipeline(runs: Path):
    assert pinned_latest(runs, "latest") == "latest:indexfoundry"
    assert pinned_latest(runs, "latest:papers") == "latest:papers"
    assert pinned_latest(runs, OLD) == OLD
    assert pinned_latest(runs.parent / "empty", "latest") == "latest"  # no run yet: pinned when one completes


def test_a_failed_run_lists_where_it_failed_not_its_counts(runs: Path):
    from indexfoundry.models.manifests import ErrorRecord, PhaseManifest

    with RunSession.open(RunLayout(runs / NEW)) as session:
        session.manifest.phases["index"] = PhaseManifest(  # type: ignore[index]
            started_at="2026-11-03T00:00:00.000Z",
            status="failed",
            phase_version="1",
            tool_version="0",
            config_hash="x",
            fingerprint="x",
            errors=[ErrorRecord(code="RUN_SHRANK", message="m", phase="index")],
        )
        session.commit()
    item = next(r for r in list_runs(runs) if r.run_id == NEW)
    assert (item.failed_in, item.failure) == ("index", "RUN_SHRANK")
