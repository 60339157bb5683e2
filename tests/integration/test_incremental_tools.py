"""The pipeline and run tools, and the CLI's --base, as surfaces of the same library calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexfoundry import api
from indexfoundry.app.tools.registry import call_tool, load_tools
from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.cli import app
from tests.conftest import SAMPLE_DOCS, folder_config, write_config
from tests.fakes import RecordingEmbedder

RUN_TOOLS = {
    "indexfoundry_pipeline_run": (False, False, True),
    "indexfoundry_run_status": (True, False, True),
    "indexfoundry_run_list": (True, False, True),
    "indexfoundry_run_diff": (True, False, True),
    "indexfoundry_run_cleanup": (False, True, True),
}


def test_the_pipeline_and_run_tools_are_registered_with_truthful_annotations():
    tools = load_tools()
    for name, (read_only, destructive, idempotent) in RUN_TOOLS.items():
        spec = tools[name]
        assert (spec.annotations.read_only, spec.annotations.destructive, spec.annotations.idempotent) == (
            read_only,
            destructive,
            idempotent,
        )
    assert tools["indexfoundry_pipeline_run"].long_running
    schema = tools["indexfoundry_run_cleanup"].input_model.model_json_schema()
    assert schema["properties"]["dry_run"]["default"] is True
    assert schema["additionalProperties"] is False


def test_run_tools_answer_status_list_diff_and_a_dry_cleanup(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = call_tool("indexfoundry_pipeline_run", folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    status = call_tool("indexfoundry_run_status", {"run_id": first.run_id}, runs_dir=runs_dir)  # type: ignore[attr-defined]
    assert status.status == "completed"  # type: ignore[attr-defined]
    listed = call_tool("indexfoundry_run_list", {"status": "completed", "limit": 5}, runs_dir=runs_dir)
    assert [r.run_id for r in listed.runs] == [first.run_id]  # type: ignore[attr-defined]
    diff = call_tool(
        "indexfoundry_run_diff",
        {"run_id_a": first.run_id, "run_id_b": "latest", "include_chunks": True},  # type: ignore[attr-defined]
        runs_dir=runs_dir,
    )
    assert diff.identical  # type: ignore[attr-defined]
    cleanup = call_tool("indexfoundry_run_cleanup", {}, runs_dir=runs_dir)
    assert cleanup.dry_run and cleanup.removed == []  # type: ignore[attr-defined]


def test_tool_inputs_are_strict(runs_dir: Path):
    with pytest.raises(IndexFoundryError) as caught:
        call_tool("indexfoundry_run_cleanup", {"older_than_days": 0}, runs_dir=runs_dir)
    assert caught.value.code == "CONFIG_INVALID"
    with pytest.raises(IndexFoundryError) as caught:
        call_tool("indexfoundry_run_list", {"colour": "red"}, runs_dir=runs_dir)
    assert caught.value.code == "CONFIG_INVALID"


def test_cli_base_latest_runs_incrementally_and_reports_reuse(tree, runs_dir: Path, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    config = write_config(tmp_path / "config.yaml", folder_config(docs))
    runner = CliRunner()
    args = ["pipeline", "run", str(config), "--runs-dir", str(runs_dir), "--json", "--base", "latest"]
    first = runner.invoke(app, args)  # no completed run yet: a full run
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    out = json.loads(second.output)
    assert out["phases"]["extract"]["reused"] == 3 and out["phases"]["extract"]["new"] == 0
    assert out["phases"]["index"]["new"] == 0
    status = api.status(out["run_id"], runs_dir=runs_dir)
    assert status.base_run_id == json.loads(first.output)["run_id"]
    assert status.phases["extract"].reused == 3  # type: ignore[index]


def test_a_base_that_does_not_exist_is_run_not_found(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    with pytest.raises(IndexFoundryError) as caught:
        api.pipeline_run(folder_config(docs), runs_dir=runs_dir, base="0190a000-0000-7000-8000-000000000000")
    assert caught.value.code == "RUN_NOT_FOUND"


def test_a_forced_extract_rerun_does_not_copy_from_the_base(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    first = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder())
    second = api.pipeline_run(folder_config(docs), runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    assert second.phases["extract"].reused == 3
    forced = api.run_phase("extract", second.run_id, runs_dir=runs_dir, force=True)
    assert forced.phases["extract"].status == "completed"
    assert (forced.phases["extract"].reused, forced.phases["extract"].new) == (0, 3)
