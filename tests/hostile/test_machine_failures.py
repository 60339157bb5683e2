"""Failures of the machine: a file size limit hit while writing artifacts, and SIGKILL at
random moments. Either way the run stops with a clear error (or just stops), no half-written
artifact is trusted later, and a rerun of the same run ends byte-identical to a clean run."""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.pipeline.runner import new_run_id
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config, write_config, write_tree
from tests.integration.test_incremental import artifact_bytes

DOCS: dict[str, str | bytes] = {
    **SAMPLE_DOCS,
    **{
        f"notes/n{i}.md": f"# Note {i}\n\n## Body\n\n" + f"Note {i} says something about topic {i}. " * 40 + "\n"
        for i in range(8)
    },
}


def _cli(config: Path, runs_dir: Path, run_id: str, fsize: int | None = None) -> subprocess.Popen[bytes]:
    def limit() -> None:  # runs in the child before exec
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.Popen(
        [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config), "--run-id", run_id, "--json"],
        env={**os.environ, "INDEXFOUNDRY_RUNS_DIR": str(runs_dir), "PYTHONHASHSEED": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object], dict[str, bytes]]:
    """The config, and the artifacts of one clean run of it (the reference every resumed run must match)."""
    root = tmp_path_factory.mktemp("machine")
    docs = write_tree(root / "docs", DOCS)
    config = folder_config(docs, index={"embedding_model": "hash", "batch_size": 4}, extract={"workers": 1})
    path = write_config(root / "config.yaml", config)
    clean_runs = root / "clean-runs"
    clean = api.pipeline_run(config, runs_dir=clean_runs)
    errors = RunLayout(clean_runs / clean.run_id).errors_log
    assert clean.status == "completed", errors.read_text() if errors.is_file() else clean
    return path, config, artifact_bytes(RunLayout(clean_runs / clean.run_id))


@pytest.mark.parametrize(
    "fsize_kb", [4, pytest.param(24, marks=pytest.mark.slow), 96, pytest.param(192, marks=pytest.mark.slow)]
)
def test_a_file_size_limit_hit_while_writing_artifacts_fails_clearly_and_the_run_resumes_to_a_clean_result(
    fsize_kb: int, corpus, runs_dir: Path
):
    config_path, _, clean = corpus
    run_id = new_run_id()
    proc = _cli(config_path, runs_dir, run_id, fsize=fsize_kb * 1024)
    out, err = proc.communicate(timeout=300)
    stderr = err.decode(errors="replace")
    if proc.returncode == 0:
        pytest.skip(f"the whole run fits under {fsize_kb} kB; nothing to test at this limit")
    assert "Traceback" not in stderr, stderr[-2000:]  # a clear one-line error, not a crash
    layout = RunLayout(runs_dir / run_id)
    if stderr.strip():  # failed before a phase could record it: the CLI's one-line error
        assert stderr.strip().startswith("INTERNAL_ERROR:"), stderr
    else:  # a phase failed and recorded why
        assert json.loads(out)["status"] == "failed"
        status = api.status(run_id, runs_dir=runs_dir)
        assert status.status == "failed"
        # Storage full: a recoverable INTERNAL_ERROR, or the vector store's own DB_ERROR when Chroma's write failed.
        last = status.errors[-1]
        assert (last.code, last.recoverable) in {("INTERNAL_ERROR", True), ("DB_ERROR", True)}, last
    rerun = api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run_id)
    assert rerun.status == "completed"
    assert artifact_bytes(layout) == clean
    assert not list(layout.root.rglob("*.tmp")), "temp files left behind"


KILL_REPETITIONS = 20


@pytest.mark.slow
def test_sigkill_at_twenty_seeded_random_moments_always_resumes_to_a_byte_identical_run(corpus, runs_dir: Path):
    config_path, _, clean = corpus
    # How long a whole run takes in a child process: kills land anywhere inside it. The second
    # probe is timed: like the runs below, it finds the runs folder's work cache filled, and is
    # faster than the first (timed on the first, about half the kills came after the run ended).
    for _ in range(2):
        start = time.monotonic()
        probe = _cli(config_path, runs_dir, new_run_id())
        probe.communicate(timeout=300)
        span = time.monotonic() - start
        assert probe.returncode == 0
    rng = random.Random(20260930)
    outcomes: list[str] = []
    for repetition in range(KILL_REPETITIONS):
        run_id = new_run_id()
        proc = _cli(config_path, runs_dir, run_id)
        delay = rng.uniform(0.3, span)
        try:
            proc.wait(timeout=delay)
            outcomes.append("finished")
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            outcomes.append("killed")
        finally:
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
        rerun = api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run_id)
        assert rerun.status == "completed", (repetition, delay)
        layout = RunLayout(runs_dir / run_id)
        resumed = artifact_bytes(layout)
        # Every artifact, upsert_stats.json included (it counts changes against the run's last
        # committed index, not the live store), equals the clean run's.
        assert resumed == clean, (repetition, delay)
        assert not list(layout.root.rglob("*.tmp")), (repetition, delay)
    assert outcomes.count("killed") >= KILL_REPETITIONS // 2, outcomes
    print(f"kills: {outcomes.count('killed')}/{KILL_REPETITIONS}")


class _Died(BaseException):
    """Stands in for SIGKILL inside the process: nothing in the pipeline catches it."""


def test_a_run_that_dies_after_the_upsert_and_before_the_index_manifest_resumes_byte_identical(corpus, runs_dir: Path):
    config_path, _, clean = corpus

    def die_after_index(ctx, phase):  # type: ignore[no-untyped-def]
        outcome = phase.run(ctx)
        if phase.name == "index":
            raise _Died  # the vectors are in the store; the index manifest entry is not written
        return outcome

    run_id = new_run_id()
    with pytest.raises(_Died):
        api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run_id, phase_runner=die_after_index)
    rerun = api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run_id)
    assert rerun.status == "completed"
    assert artifact_bytes(RunLayout(runs_dir / run_id)) == clean


def test_temp_files_left_by_a_killed_writer_are_removed_by_the_next_run_of_that_run(corpus, runs_dir: Path):
    # Found by the random-kill test: a kill inside an atomic write of served/openapi.json left its temp file.
    config_path, _, clean = corpus
    run = api.pipeline_run(config_path, runs_dir=runs_dir)
    layout = RunLayout(runs_dir / run.run_id)
    stale = [layout.root / "served" / ".openapi.json.k1ll3d.tmp", layout.raw_dir / ".copy.x7.tmp"]
    for path in stale:
        path.write_bytes(b"half a write")
    rerun = api.pipeline_run(config_path, runs_dir=runs_dir, run_id=run.run_id)
    assert rerun.status == "completed"
    assert not [path for path in stale if path.exists()]
    assert artifact_bytes(layout) == clean
