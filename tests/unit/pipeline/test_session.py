"""RunSession (pipeline/session.py): the one writer of manifest.json, holding the run lock."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.manifests import MANIFEST_SCHEMA_VERSION
from indexfoundry.phases.normalize import NormalizePhase
from indexfoundry.pipeline.session import RunSession
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import load_manifest
from tests.conftest import REPO

SRC = REPO / "src" / "indexfoundry"


def _config(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig.model_validate({"connect": {"sources": [{"type": "folder", "path": str(tmp_path)}]}})


def test_a_created_run_has_a_manifest_and_a_frozen_config(tmp_path: Path):
    layout = RunLayout(tmp_path / "runs" / "0190a1b2-0000-7000-8000-000000000001")
    manifest = RunSession.create(layout, _config(tmp_path))
    assert load_manifest(layout) == manifest
    assert layout.config.is_file()


def test_a_second_process_cannot_open_a_run_while_a_session_holds_it(tmp_path: Path):
    layout = RunLayout(tmp_path / "runs" / "0190a1b2-0000-7000-8000-000000000002")
    RunSession.create(layout, _config(tmp_path))
    script = (
        "import sys; from pathlib import Path; from indexfoundry.errors import IndexFoundryError; "
        "from indexfoundry.pipeline.session import RunSession; from indexfoundry.storage.layout import RunLayout\n"
        "try:\n    RunSession.open(RunLayout(Path(sys.argv[1]))).__enter__()\n"
        "except IndexFoundryError as e:\n    print(e.code)\n"
    )
    with RunSession.open(layout):
        out = subprocess.run(
            [sys.executable, "-c", script, str(layout.root)], capture_output=True, text=True, timeout=60
        )
    assert out.stdout.strip() == "RUN_LOCKED"


def test_recording_a_tool_call_fingerprints_the_phase_entry_with_the_call(tmp_path: Path):
    layout = RunLayout(tmp_path / "runs" / "0190a1b2-0000-7000-8000-000000000003")
    RunSession.create(layout, _config(tmp_path))
    layout.chunks.parent.mkdir(parents=True, exist_ok=True)
    layout.chunks.write_text('{"chunk_id": "a"}\n', encoding="utf-8")
    with RunSession.open(layout) as session:
        first = session.record_tool(NormalizePhase(), "extract", "tool_a", "key1", [layout.chunks], 1, layout.chunks)
        second = session.record_tool(NormalizePhase(), "extract", "tool_a", "key2", [layout.chunks], 1, layout.chunks)
    saved = load_manifest(layout).phases["normalize"]
    assert first.fingerprint != second.fingerprint
    assert saved.fingerprint == second.fingerprint
    assert saved.details["written_by"] == "tool_a"
    assert [a.path for a in saved.artifacts] == ["normalized/chunks.jsonl"]
    assert load_manifest(layout).totals.chunks_created == 1


def test_a_newer_manifest_schema_is_refused_on_open(tmp_path: Path):
    layout = RunLayout(tmp_path / "runs" / "0190a1b2-0000-7000-8000-000000000004")
    RunSession.create(layout, _config(tmp_path))
    text = layout.manifest.read_text()
    assert f'"schema_version": {MANIFEST_SCHEMA_VERSION}' in text
    layout.manifest.write_text(text.replace(f'"schema_version": {MANIFEST_SCHEMA_VERSION}', '"schema_version": 99'))
    with pytest.raises(IndexFoundryError) as info, RunSession.open(layout):
        pass
    assert info.value.code == "CONFIG_INVALID"


def _writes_the_manifest(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Attribute) and first.attr == "manifest":
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if "write" in name or "dump" in name or "replace" in name:
                    return True
    return False


def test_exactly_one_module_writes_manifest_json():
    writers = sorted(
        p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py") if _writes_the_manifest(ast.parse(p.read_text()))
    )
    assert writers == ["pipeline/session.py"]


def test_readers_share_an_old_manifest_until_a_commit_replaces_it(tmp_path: Path):
    import os

    from indexfoundry.storage.manifest import read_manifest

    layout = RunLayout(tmp_path / "runs" / "0190a1b2-0000-7000-8000-000000000009")
    RunSession.create(layout, _config(tmp_path))
    fresh = read_manifest(layout)
    assert read_manifest(layout) is not fresh and read_manifest(layout) == fresh  # just written: read again
    old = 1_600_000_000 * 10**9
    os.utime(layout.manifest, ns=(old, old))
    shared = read_manifest(layout)
    assert read_manifest(layout) is shared  # unchanged since long ago: parsed once
    with RunSession.open(layout) as session:
        session.manifest.base_run_id = "0190a1b2-0000-7000-8000-00000000000a"
        session.commit()
    after = read_manifest(layout)
    assert after is not shared and after.base_run_id == "0190a1b2-0000-7000-8000-00000000000a"
    assert after == load_manifest(layout)
