"""run cleanup: dry run by default, FIFO max_runs, never a run in use, never outside the runs folder."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.pipeline.cleanup import cleanup_runs
from indexfoundry.pipeline.inuse import mark_in_use, release, runs_in_use
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest, run_lock
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder

LATER = datetime.now(UTC) + timedelta(days=365)


@pytest.fixture
def three_runs(tree, runs_dir: Path) -> list[str]:
    docs = tree(SAMPLE_DOCS)
    return [
        api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder()).run_id for _ in range(3)
    ]


def _has_artifacts(runs_dir: Path, run_id: str) -> bool:
    return (runs_dir / run_id / "normalized").exists()


def test_cleanup_is_a_dry_run_by_default_and_reports_space(three_runs, runs_dir: Path):
    out = cleanup_runs(runs_dir, older_than_days=30, now=LATER)
    assert out.dry_run
    assert [i.run_id for i in out.removed] == three_runs[:2]
    assert all(i.bytes > 0 and i.reason == "older_than_days" for i in out.removed)
    assert out.bytes_freed == sum(i.bytes for i in out.removed)
    assert all(_has_artifacts(runs_dir, r) for r in three_runs)


def test_cleanup_keeps_manifests_and_the_newest_completed_run(three_runs, runs_dir: Path):
    out = cleanup_runs(runs_dir, older_than_days=30, dry_run=False, now=LATER)
    assert [i.run_id for i in out.removed] == three_runs[:2]
    assert {k.run_id: k.reason for k in out.protected} == {
        three_runs[2]: "newest completed run of pipeline indexfoundry"
    }
    for run_id in three_runs[:2]:
        assert sorted(p.name for p in (runs_dir / run_id).iterdir() if p.name != ".lock") == [
            "config.json",
            "manifest.json",
        ]
    assert _has_artifacts(runs_dir, three_runs[2])
    assert {r.run_id for r in api.runs(runs_dir=runs_dir)} == set(three_runs)
    again = cleanup_runs(runs_dir, older_than_days=30, dry_run=False, now=LATER)
    assert again.removed == []


def test_cleanup_without_keep_manifests_removes_the_whole_run_folder(three_runs, runs_dir: Path):
    cleanup_runs(runs_dir, older_than_days=30, keep_manifests=False, dry_run=False, now=LATER)
    assert not (runs_dir / three_runs[0]).exists()
    assert (runs_dir / three_runs[2]).exists()


def test_max_runs_removes_the_oldest_runs_first(three_runs, runs_dir: Path):
    out = cleanup_runs(runs_dir, older_than_days=30, max_runs=2, dry_run=False)
    assert [(i.run_id, i.reason) for i in out.removed] == [(three_runs[0], "max_runs")]
    assert _has_artifacts(runs_dir, three_runs[1])


def test_a_run_in_use_is_never_removed_but_a_stale_mark_is_ignored(three_runs, runs_dir: Path):
    mark_in_use(runs_dir, three_runs[0], "serve", os.getpid())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    mark_in_use(runs_dir, three_runs[1], "serve", int(dead.stdout))
    assert runs_in_use(runs_dir) == {three_runs[0]: ["serve"]}
    out = cleanup_runs(runs_dir, older_than_days=30, dry_run=False, now=LATER)
    assert [i.run_id for i in out.removed] == [three_runs[1]]
    assert {k.run_id for k in out.protected} == {three_runs[0], three_runs[2]}
    assert _has_artifacts(runs_dir, three_runs[0])
    release(runs_dir, three_runs[0], "serve", os.getpid())
    assert runs_in_use(runs_dir) == {}


def test_the_base_of_a_run_in_progress_is_never_removed(three_runs, runs_dir: Path):
    running = RunLayout(runs_dir / three_runs[2])
    manifest = load_manifest(running)
    manifest.base_run_id = three_runs[0]
    RunSession(running, manifest).commit(totals=False)
    with run_lock(running):
        out = cleanup_runs(runs_dir, older_than_days=30, dry_run=False, now=LATER)
    reasons = {k.run_id: k.reason for k in out.protected}
    assert reasons[three_runs[0]] == "base of a run in progress"
    assert _has_artifacts(runs_dir, three_runs[0])
    assert [i.run_id for i in out.removed] == [three_runs[1]]


def test_cleanup_never_follows_symlinks_out_of_the_runs_folder(three_runs, runs_dir: Path, tmp_path: Path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("do not delete")
    # A run-id-named symlink in the runs folder, and a symlink inside an old run.
    (runs_dir / "0190a000-0000-7000-8000-00000000dead").symlink_to(outside, target_is_directory=True)
    (runs_dir / three_runs[0] / "raw" / "escape").symlink_to(outside, target_is_directory=True)
    cleanup_runs(runs_dir, older_than_days=30, keep_manifests=False, dry_run=False, now=LATER)
    assert (outside / "keep.txt").read_text() == "do not delete"
    assert (runs_dir / "0190a000-0000-7000-8000-00000000dead").is_symlink()
    assert not (runs_dir / three_runs[0]).exists()


def test_cli_cleanup_prints_what_it_would_remove_and_how_much(three_runs, runs_dir: Path):
    result = CliRunner().invoke(app, ["run", "cleanup", "--runs-dir", str(runs_dir), "--max-runs", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.count("would remove artifacts of") == 2
    assert "dry run" in result.output
    assert all(_has_artifacts(runs_dir, r) for r in three_runs)
