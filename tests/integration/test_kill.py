"""A pipeline SIGKILLed during any phase shows 'failed' in that phase; a rerun resumes and
ends with the same artifacts as a clean run.

The pause comes from the test-only entry point tests/integration/paused_pipeline.py (it injects
a pausing ``phase_runner`` into the runner), so the kill lands while the phase is under way,
never on a timer guess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.pipeline.runner import new_run_id
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config, write_config, write_tree
from tests.integration.test_incremental import artifact_bytes
from tests.waiting import wait_for

PHASES = ["connect", "extract", "normalize", "index", "serve"]
MORE_DOCS: dict[str, str | bytes] = {
    **SAMPLE_DOCS,
    **{f"notes/n{i}.md": f"# Note {i}\n\n## Body\n\nNote {i} has a few words of text.\n" for i in range(6)},
}


REPO = Path(__file__).resolve().parents[2]


def start_pipeline(config: Path, runs_dir: Path, run_id: str, delay: str | None) -> subprocess.Popen[bytes]:
    """The pipeline in a child process; ``delay`` ("phase:seconds,...") pauses phases, None runs straight."""
    env = {**os.environ, "INDEXFOUNDRY_RUNS_DIR": str(runs_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.paused_pipeline", str(config), run_id, delay or ""],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for_pause(layout: RunLayout, phase: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Block until the run logs that ``phase`` is paused by the test hook."""

    def paused() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"pipeline exited early: {proc.stderr.read().decode() if proc.stderr else ''}")
        if layout.events_log.is_file():
            for line in layout.events_log.read_text(encoding="utf-8").splitlines():
                event = json.loads(line)
                if event.get("event") == "test_phase_delay" and event.get("phase") == phase:
                    return True
        return False

    assert wait_for(paused, timeout=timeout), f"phase {phase} never paused"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    docs = write_tree(tmp_path / "docs", MORE_DOCS)
    config = folder_config(docs, index={"embedding_model": "hash", "batch_size": 2})
    return write_config(tmp_path / "config.yaml", config), config


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_a_pipeline_killed_during_a_phase_is_failed_there_and_a_rerun_resumes_to_a_clean_result(
    phase: str, setup, runs_dir: Path, tmp_path: Path
):
    config_path, config = setup
    run_id = new_run_id()
    layout = RunLayout(runs_dir / run_id)
    proc = start_pipeline(config_path, runs_dir, run_id, f"{phase}:60")
    try:
        wait_for_pause(layout, phase, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    status = api.status(run_id, runs_dir=runs_dir)
    assert status.status == "failed"
    assert status.died_in_phase == phase
    assert status.phases[phase].status == "failed"  # type: ignore[index]

    rerun = api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run_id)
    assert rerun.status == "completed"
    done_before = PHASES[: PHASES.index(phase)]
    assert [rerun.phases[p].status for p in done_before] == ["skipped"] * len(done_before)  # type: ignore[index]
    assert rerun.phases[phase].status == "completed"  # type: ignore[index]

    clean_runs = tmp_path / "clean-runs"
    clean = api.pipeline_run(config, runs_dir=clean_runs)
    assert artifact_bytes(layout) == artifact_bytes(RunLayout(clean_runs / clean.run_id))
    assert not [p for p in layout.root.rglob("*.tmp")], "temp files left behind"
