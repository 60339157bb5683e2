"""Run ids and paths an agent passes to MCP tools stay inside the run folder or the roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp.security import Roots, check_run_id, guard_arguments, resolve_in_run, tokens_equal

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


@pytest.mark.parametrize("path", ["../other/manifest.json", "normalized/../../x", "/etc/passwd", "~/x", "C:\\x", ""])
def test_run_relative_paths_cannot_leave_the_run(layout: RunLayout, path: str):
    assert code_of(lambda: resolve_in_run(layout.root.parent, RUN, path)) == "NOT_FOUND"


def test_a_symlink_inside_the_run_that_points_out_is_refused(layout: RunLayout, tmp_path: Path):
    outside = tmp_path / "secret.txt"
    outside.write_text("secret", encoding="utf-8")
    (layout.normalized_dir / "link.jsonl").symlink_to(outside)
    assert code_of(lambda: resolve_in_run(layout.root.parent, RUN, "normalized/link.jsonl")) == "NOT_FOUND"
    found = resolve_in_run(layout.root.parent, RUN, "normalized/chunks.jsonl")
    assert found == (layout.normalized_dir / "chunks.jsonl").resolve()


def test_host_paths_must_resolve_inside_a_root(tmp_path: Path):
    root = tmp_path / "allowed"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "escape").symlink_to(tmp_path / "elsewhere")
    roots = Roots([root])
    assert roots.resolve("docs") == (root / "docs").resolve()
    assert roots.resolve(str(root / "docs")) == (root / "docs").resolve()
    for bad in ("../elsewhere", str(tmp_path / "elsewhere"), "escape", "/etc"):
        assert code_of(lambda bad=bad: roots.resolve(bad)) == "NOT_FOUND"


def test_guard_checks_run_ids_run_paths_and_host_paths_by_argument_name(layout: RunLayout, tmp_path: Path):
    root = tmp_path / "allowed"
    (root / "docs").mkdir(parents=True)
    roots = Roots([root])
    ok = guard_arguments(
        {
            "run_id": RUN,
            "chunks_path": "normalized/chunks.jsonl",
            "input_paths": ["normalized/chunks.jsonl"],
            "connect": {"sources": [{"type": "folder", "path": "docs"}, {"type": "url", "url": "https://x.org/a"}]},
            "source": "https://example.org/a.pdf",
        },
        roots,
        layout.runs_dir,
    )
    assert ok["chunks_path"] == "normalized/chunks.jsonl"
    assert ok["connect"]["sources"][0]["path"] == str((root / "docs").resolve())
    assert ok["source"] == "https://example.org/a.pdf"
    latest = guard_arguments({"run_id_a": "latest", "base_run_id": "latest"}, roots, layout.runs_dir)
    assert latest == {"run_id_a": "latest", "base_run_id": "latest"}
    bad_cases = [
        ({"run_id": "nope"}, "RUN_NOT_FOUND"),
        ({"run_id_a": RUN, "run_id_b": "x"}, "RUN_NOT_FOUND"),
        ({"run_id": RUN, "chunks_path": "../../etc/passwd"}, "NOT_FOUND"),
        ({"run_id": RUN, "input_paths": ["normalized/chunks.jsonl", "/etc/passwd"]}, "NOT_FOUND"),
        ({"pdf_path": "../x.pdf"}, "NOT_FOUND"),
        ({"connect": {"sources": [{"type": "folder", "path": "/etc"}]}}, "NOT_FOUND"),
        ({"source": "../../secret.pdf"}, "NOT_FOUND"),
        ({"serve": {"api_key_file": "/etc/shadow"}}, "NOT_FOUND"),
        ({"index": {"vector_db": {"connection": {"path": "/var/lib/elsewhere"}}}}, "NOT_FOUND"),
    ]
    for arguments, code in bad_cases:
        assert code_of(lambda a=arguments: guard_arguments(a, roots, layout.runs_dir)) == code, arguments


def test_bearer_tokens_compare_exactly():
    assert tokens_equal("abc", "abc")
    assert not tokens_equal("abc", "abd")
    assert not tokens_equal("", "abc")
