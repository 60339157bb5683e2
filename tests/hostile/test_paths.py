"""No run id, tool path or cleanup can make IndexFoundry read or write outside the runs folder
and the configured source roots."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.pipeline.cleanup import cleanup_runs
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.fakes import RecordingEmbedder

HOSTILE_RUN_IDS = ["../escape", "../../tmp/escape", "/tmp/escape-abs", "a/../../escape", "..", ".", "x\x00y"]


@pytest.mark.parametrize("run_id", HOSTILE_RUN_IDS)
def test_a_run_id_that_is_a_path_is_refused_before_anything_is_written(
    run_id: str, tree, runs_dir: Path, tmp_path: Path
):
    docs = tree(SAMPLE_DOCS)
    before = sorted(p for p in tmp_path.rglob("*") if "docs" not in p.parts)
    with pytest.raises(IndexFoundryError) as caught:
        api.pipeline_run(folder_config(docs), runs_dir=runs_dir, run_id=run_id, embedder=RecordingEmbedder())
    assert caught.value.code in {"CONFIG_INVALID", "RUN_NOT_FOUND"}
    after = sorted(p for p in tmp_path.rglob("*") if "docs" not in p.parts)
    assert after == before, "a hostile run id created files"
    assert not Path("/tmp/escape-abs").exists()
    for call in (api.status,):
        with pytest.raises(IndexFoundryError) as again:
            call(run_id, runs_dir=runs_dir)
        assert again.value.code in {"CONFIG_INVALID", "RUN_NOT_FOUND"}


def test_cleanup_never_deletes_through_symlinks_planted_inside_a_run(tree, runs_dir: Path, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    old, new = (
        api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder()).run_id for _ in range(2)
    )
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("must survive")
    os.symlink(victim, runs_dir / old / "raw" / "planted-dir")
    os.symlink(victim / "precious.txt", runs_dir / old / "normalized" / "planted-file.txt")
    os.symlink(victim, runs_dir / "01a00000-0000-7000-8000-000000000000")  # a "run" that is a link out
    out = cleanup_runs(
        runs_dir, older_than_days=1, keep_manifests=False, dry_run=False, now=datetime.now(UTC) + timedelta(days=400)
    )
    assert old in {item.run_id for item in out.removed}
    assert (victim / "precious.txt").read_text() == "must survive"
    assert (runs_dir / new / "manifest.json").is_file()  # the newest completed run is kept
