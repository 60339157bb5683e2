"""Two pipelines over one runs folder at once never corrupt each other."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.pipeline.runner import new_run_id
from indexfoundry.storage.layout import RunLayout
from tests.conftest import folder_config, write_config, write_tree
from tests.integration.test_incremental import artifact_bytes
from tests.integration.test_kill import MORE_DOCS, start_pipeline, wait_for_pause


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    _out, err = proc.communicate(timeout=300)
    return proc.returncode, err.decode()


@pytest.mark.slow
def test_two_pipelines_running_at_once_over_one_runs_folder_both_complete_with_equal_artifacts(
    tmp_path: Path, runs_dir: Path
):
    docs = write_tree(tmp_path / "docs", MORE_DOCS)
    config = write_config(tmp_path / "config.yaml", folder_config(docs, index={"embedding_model": "hash"}))
    first_id, second_id = new_run_id(), new_run_id()
    first = start_pipeline(config, runs_dir, first_id, "index:2")
    wait_for_pause(RunLayout(runs_dir / first_id), "index", first)
    # The second run embeds the same texts and writes the same embedding cache meanwhile.
    second = start_pipeline(config, runs_dir, second_id, None)
    assert _finish(second)[0] == 0
    assert _finish(first)[0] == 0
    a = artifact_bytes(RunLayout(runs_dir / first_id))
    b = artifact_bytes(RunLayout(runs_dir / second_id))
    assert a == b
    listed = {r.run_id: r.status for r in api.runs(runs_dir=runs_dir)}
    assert listed == {first_id: "completed", second_id: "completed"}


def test_a_second_process_on_the_same_run_gets_run_locked(tmp_path: Path, runs_dir: Path):
    docs = write_tree(tmp_path / "docs", MORE_DOCS)
    config = write_config(tmp_path / "config.yaml", folder_config(docs))
    run_id = new_run_id()
    first = start_pipeline(config, runs_dir, run_id, "extract:30")
    try:
        wait_for_pause(RunLayout(runs_dir / run_id), "extract", first)
        second = start_pipeline(config, runs_dir, run_id, None)
        code, err = _finish(second)
        assert code == 4
        assert err.startswith("RUN_LOCKED")
    finally:
        first.kill()
        first.communicate()


@pytest.mark.slow
def test_two_runs_sharing_one_configured_store_take_turns_in_the_index_phase(tmp_path: Path, runs_dir: Path):
    docs = write_tree(tmp_path / "docs", MORE_DOCS)
    shared = tmp_path / "shared-chroma"
    config = write_config(
        tmp_path / "config.yaml",
        folder_config(
            docs,
            index={"embedding_model": "hash", "vector_db": {"provider": "chroma", "connection": {"path": str(shared)}}},
        ),
    )
    first_id, second_id = new_run_id(), new_run_id()
    first = start_pipeline(config, runs_dir, first_id, "index:6")
    wait_for_pause(RunLayout(runs_dir / first_id), "index", first)
    second = start_pipeline(config, runs_dir, second_id, None)
    results = [_finish(second), _finish(first)]
    assert [code for code, _ in results] == [0, 0], results
    assert os.listdir(runs_dir / ".locks")
    # The second run's index phase started only once the first one's had finished.
    first_done = _event_time(RunLayout(runs_dir / first_id), "phase_completed", "index")
    second_started = _event_time(RunLayout(runs_dir / second_id), "phase_started", "index")
    assert second_started >= first_done


def _event_time(layout: RunLayout, event: str, phase: str) -> str:
    for line in layout.events_log.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data["event"] == event and data.get("phase") == phase:
            return str(data["ts"])
    raise AssertionError(f"no {event} for {phase}")
