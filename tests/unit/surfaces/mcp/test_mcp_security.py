"""Run ids and paths an agent passes to MCP tools stay inside the run folder or the roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp.adapter import Exposed, Runner
from indexfoundry.surfaces.mcp.security import check_run_id, tokens_equal

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


@pytest.mark.parametrize("value", ["latest", "../" + RUN, "0190ABCD-0000-7000-8000-00000000000A", "", 42, None])
def test_anything_but_a_lowercase_uuid_is_not_a_run_id(value):
    assert code_of(lambda: check_run_id(value)) == "RUN_NOT_FOUND"


def test_a_uuid_is_a_run_id():
    assert check_run_id(RUN) == RUN


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


def test_a_malformed_run_id_is_run_not_found_before_the_schema_is_asked(tmp_path: Path):
    specs = api.agent_tool_specs(api.AgentScope(api.Roots([tmp_path])))
    spec = specs["indexfoundry_normalize_chunk"]
    tool = Exposed(spec.name, spec.description, spec.input_model, spec.func, False, False, True, False)
    runner = Runner()
    for arguments in ({"run_id": "nope"}, {"run_id": "../" + RUN, "input_paths": []}):
        assert code_of(lambda a=arguments: runner.prepare(tool, a)) == "RUN_NOT_FOUND"
    assert code_of(lambda: runner.prepare(tool, {"run_id": RUN, "input_paths": [], "bogus": 1})) == "CONFIG_INVALID"


def test_bearer_tokens_compare_exactly():
    assert tokens_equal("abc", "abc")
    assert not tokens_equal("abc", "abd")
    assert not tokens_equal("", "abc")
