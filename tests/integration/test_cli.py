"""The CLI as a user meets it: real processes, exit codes, one-line errors, --json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_DOCS, folder_config, write_config


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def test_invalid_config_exits_2_with_one_line_naming_the_key_and_no_traceback(tmp_path: Path):
    config = write_config(
        tmp_path / "c.yaml",
        {"connect": {"sources": [{"type": "folder", "path": "d"}]}, "index": {"embeding_model": "x"}},
    )
    done = cli("pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("CONFIG_INVALID: ") and "index.embeding_model" in lines[0]


def test_unknown_run_id_is_run_not_found_with_exit_3(tmp_path: Path):
    done = cli("run", "status", "01890a5d-ac96-774b-bcce-b302099a8057", "--runs-dir", str(tmp_path))
    assert done.returncode == 3
    assert done.stderr.startswith("RUN_NOT_FOUND: ")
    done = cli("search", "x", "--run-id", "../etc", "--runs-dir", str(tmp_path), "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout)["error"]["code"] == "RUN_NOT_FOUND"


@pytest.mark.slow
def test_pipeline_run_json_prints_the_pipeline_run_output_and_search_json_ranks(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    config = write_config(tmp_path / "c.yaml", folder_config(docs))
    runs = tmp_path / "runs"
    done = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "completed"
    assert set(out["phases"]) == {"connect", "extract", "normalize", "index", "serve"}
    assert out["summary"]["chunks_indexed"] > 0
    human = cli("pipeline", "run", str(config), "--runs-dir", str(runs), "--run-id", out["run_id"])
    assert human.returncode == 0
    assert human.stdout.strip().splitlines()[-1] == f"run {out['run_id']}"
    assert "skipped" in human.stdout
    raw = json.loads((runs / out["run_id"] / "raw" / "raw_manifest.jsonl").read_text().splitlines()[0])
    extracted = cli(
        "extract", "document", raw["path"].removeprefix("raw/"), "--run-id", "latest", "--runs-dir", str(runs), "--json"
    )
    assert extracted.returncode == 0, extracted.stderr  # 'latest' names the run, as for every --run-id
    assert json.loads(extracted.stdout)["artifacts"]["text"]
    found = cli(
        "search",
        "change the theme colours",
        "--run-id",
        out["run_id"],
        "--runs-dir",
        str(runs),
        "--json",
        "--top-k",
        "2",
    )
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert len(results) == 2
    assert results[0]["source"]["uri"] == "docs/guide/theme.md"
    assert results[0]["score"] >= results[1]["score"]
    assert {"chunk_id", "score", "text", "source", "position", "metadata"} <= set(results[0])
    listed = cli("run", "list", "--runs-dir", str(runs), "--json")
    assert [r["run_id"] for r in json.loads(listed.stdout)["runs"]] == [out["run_id"]]
    status = cli("run", "status", out["run_id"], "--runs-dir", str(runs), "--json")
    assert json.loads(status.stdout)["phases"]["index"]["status"] == "completed"


@pytest.mark.slow
def test_runs_dir_comes_from_the_environment(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    config = write_config(tmp_path / "c.yaml", folder_config(docs))
    env_runs = tmp_path / "env-runs"
    done = subprocess.run(
        [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**__import__("os").environ, "INDEXFOUNDRY_RUNS_DIR": str(env_runs)},
    )
    assert done.returncode == 0, done.stderr
    assert (env_runs / json.loads(done.stdout)["run_id"] / "manifest.json").is_file()


def test_config_schema_prints_a_json_schema():
    done = cli("config", "schema")
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    assert schema["title"] == "IndexFoundry pipeline config"
    assert "connect" in schema["required"]
