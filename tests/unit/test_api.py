"""Paths the run tools resolve with ``api.resolve_in_run`` stay inside the run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.layout import RunLayout

RUN = "01900000-0000-7000-8000-000000000001"


@pytest.fixture
def layout(runs_dir: Path) -> RunLayout:
    layout = RunLayout.for_run(runs_dir, RUN)
    layout.create()
    (layout.normalized_dir / "chunks.jsonl").write_text("{}\n", encoding="utf-8")
    return layout


def code_of(call) -> str:
    with pytest.raises(IndexFoundryError) as info:
        call()
    return info.value.code


@pytest.mark.parametrize("path", ["../other/manifest.json", "normalized/../../x", "/etc/passwd", "~/x", ""])
def test_run_relative_paths_cannot_leave_the_run(layout: RunLayout, path: str):
    """What the run tools resolve a path with: inside the run folder, or NOT_FOUND."""
    try:
        found = api.resolve_in_run(layout.root.parent, RUN, path)
    except IndexFoundryError as error:
        assert error.code == "NOT_FOUND"
        return
    root = layout.root.resolve()
    assert found == root or root in found.parents  # '~/x' is a folder named '~' in the run


def test_a_symlink_inside_the_run_that_points_out_is_refused(layout: RunLayout, tmp_path: Path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret", encoding="utf-8")
    (layout.normalized_dir / "link.jsonl").symlink_to(outside)
    assert code_of(lambda: api.resolve_in_run(layout.root.parent, RUN, "normalized/link.jsonl")) == "NOT_FOUND"
    found = api.resolve_in_run(layout.root.parent, RUN, "normalized/chunks.jsonl")
    assert found == (layout.normalized_dir / "chunks.jsonl").resolve()
