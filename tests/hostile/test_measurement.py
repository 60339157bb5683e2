"""The hostile tests' memory figure is the pipeline process's own, whatever the test runner holds.

Linux carries a parent's peak RSS across fork and exec into the child's ``ru_maxrss``; a test
runner that has grown to 700 MB would make every pipeline child "use" 700 MB. The figure
``run_pipeline_measured`` reports must not move with the runner's own memory.
"""

from __future__ import annotations

from pathlib import Path

from tests.hostile.support import hostile_config, run_pipeline_measured


def test_a_pipeline_childs_peak_memory_is_its_own_not_the_test_runners(tmp_path: Path, runs_dir: Path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nOne small document.\n")
    held = bytearray(900 * 1024 * 1024)
    held[::4096] = b"\x01" * len(held[::4096])  # touch every page: 900 MB resident in this process
    result = run_pipeline_measured(hostile_config(folder), tmp_path, runs_dir)
    assert result.status == "completed"
    assert result.peak_rss_mb < 700, result.peak_rss_mb
    assert len(held) == 900 * 1024 * 1024
