"""Host paths an agent names resolve inside one of the operator's roots, or are NOT_FOUND."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError


def code_of(call) -> str:
    with pytest.raises(IndexFoundryError) as info:
        call()
    return info.value.code


def test_host_paths_must_resolve_inside_a_root(tmp_path: Path):
    root = tmp_path / "allowed"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "escape").symlink_to(tmp_path / "elsewhere")
    roots = api.Roots([root])
    assert roots.resolve("docs") == (root / "docs").resolve()
    assert roots.resolve(str(root / "docs")) == (root / "docs").resolve()
    for bad in ("../elsewhere", str(tmp_path / "elsewhere"), "escape", "/etc", "x://../../etc", "file:/etc", ""):
        assert code_of(lambda bad=bad: roots.resolve(bad)) == "NOT_FOUND"
