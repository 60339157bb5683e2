"""'latest' belongs to a pipeline, not to the runs folder: two configs run into one folder never
change silently what a search, an HTTP server or an MCP server answers from.

Every step is a real command: ``indexfoundry`` CLI processes, a background HTTP server queried over
HTTP, and the MCP server through the official SDK client.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp_types import CallToolResult

from tests.conftest import folder_config, write_config, write_tree
from tests.integration.mcp_support import error_code, free_port, server_env, stdio_session, structured, texts

pytestmark = pytest.mark.slow


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=cwd,
    )


def _search_uris(runs: Path, *args: str) -> list[str]:
    done = cli("search", "install", "--runs-dir", str(runs), "--mode", "keyword", "--json", *args)
    assert done.returncode == 0, done.stderr
    return [hit["source"]["uri"] for hit in json.loads(done.stdout)["results"]]


@pytest.fixture(scope="module")
def two_pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One runs folder, the 'handbook' config run first, then the 'papers' config."""
    root = tmp_path_factory.mktemp("pipelines")
    handbook = write_tree(
        root / "handbook",
        {"install.md": "# Install\n\nTo install the handbook tool run pip install handbook in a venv.\n"},
    )
    papers = write_tree(
        root / "papers",
        {"methods.md": "# Methods\n\nWe install sensors in the field and record the install dates.\n"},
    )
    runs = root / "runs"
    configs = {
        "handbook": write_config(root / "handbook.yaml", folder_config(handbook)),
        "papers": write_config(root / "papers.config.yaml", folder_config(papers)),
    }
    first = cli("pipeline", "run", str(configs["handbook"]), "--runs-dir", str(runs), "--json")
    assert first.returncode == 0, first.stderr
    alone = _search_uris(runs)  # one pipeline: a bare 'latest' is that pipeline's
    second = cli("pipeline", "run", str(configs["papers"]), "--runs-dir", str(runs), "--json")
    assert second.returncode == 0, second.stderr
    return {
        "root": root,
        "runs": runs,
        "configs": configs,
        "handbook": json.loads(first.stdout)["run_id"],
        "papers": json.loads(second.stdout)["run_id"],
        "alone": alone,
    }


def test_a_bare_latest_with_two_pipelines_is_a_clear_error_naming_them_and_latest_name_picks_one(two_pipelines):
    runs = two_pipelines["runs"]
    assert two_pipelines["alone"] == ["handbook/install.md"]
    ambiguous = cli("search", "install", "--runs-dir", str(runs))
    assert ambiguous.returncode == 2
    assert ambiguous.stderr.startswith("CONFIG_INVALID: 'latest' is ambiguous")
    assert "handbook" in ambiguous.stderr and "papers" in ambiguous.stderr
    assert "latest:handbook" in ambiguous.stderr and "run list" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr
    assert _search_uris(runs, "--run-id", "latest:handbook") == ["handbook/install.md"]
    assert _search_uris(runs, "--run-id", "latest:papers") == ["papers/methods.md"]
    unknown = cli("search", "install", "--runs-dir", str(runs), "--run-id", "latest:nope")
    assert unknown.returncode == 3
    assert "pipeline 'nope'" in unknown.stderr and "handbook, papers" in unknown.stderr


def test_run_list_groups_by_pipeline_and_names_each_latest(two_pipelines):
    runs = two_pipelines["runs"]
    listed = cli("run", "list", "--runs-dir", str(runs))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("pipeline papers  (latest:papers = ")
    assert lines[1].startswith(f"  {two_pipelines['papers']}  completed")
    assert lines[2].startswith("pipeline handbook  (latest:handbook = ")
    assert lines[3].startswith(f"  {two_pipelines['handbook']}  completed")
    as_json = json.loads(cli("run", "list", "--runs-dir", str(runs), "--json").stdout)["runs"]
    assert {(r["run_id"], r["pipeline"]) for r in as_json} == {
        (two_pipelines["handbook"], "handbook"),
        (two_pipelines["papers"], "papers"),
    }
    only = json.loads(cli("run", "list", "--runs-dir", str(runs), "--pipeline", "papers", "--json").stdout)["runs"]
    assert [r["run_id"] for r in only] == [two_pipelines["papers"]]


def test_base_latest_is_the_configs_own_pipeline_and_cleanup_keeps_each_newest(two_pipelines):
    runs = two_pipelines["runs"]
    again = cli(
        "pipeline", "run", str(two_pipelines["configs"]["handbook"]), "--runs-dir", str(runs), "--base", "latest"
    )
    assert again.returncode == 0, again.stderr
    rerun = again.stdout.strip().splitlines()[-1].removeprefix("run ")
    status = json.loads(cli("run", "status", rerun, "--runs-dir", str(runs), "--json").stdout)
    assert status["base_run_id"] == two_pipelines["handbook"]  # not the newer papers run
    assert _search_uris(runs, "--run-id", "latest:handbook") == ["handbook/install.md"]
    cleaned = json.loads(cli("run", "cleanup", "--runs-dir", str(runs), "--max-runs", "1", "--json").stdout)
    # The two oldest runs are over --max-runs 1; the papers run is still its pipeline's 'latest'.
    kept = {k["run_id"]: k["reason"] for k in cleaned["protected"]}
    assert kept == {two_pipelines["papers"]: "newest completed run of pipeline papers"}
    assert [r["run_id"] for r in cleaned["removed"]] == [two_pipelines["handbook"]]


def test_serve_follows_one_pipeline_and_a_bare_latest_is_refused_before_a_server_starts(two_pipelines):
    runs = two_pipelines["runs"]
    port = free_port()
    refused = cli("serve", "start", "--runs-dir", str(runs), "--port", str(port), "--background")
    assert refused.returncode == 2
    assert refused.stderr.startswith("CONFIG_INVALID: 'latest' is ambiguous")
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2)
    started = cli(
        "serve", "start", "--runs-dir", str(runs), "--run-id", "latest:papers", "--port", str(port), "--background"
    )
    assert started.returncode == 0, started.stderr
    try:
        url = f"http://127.0.0.1:{port}/api/v1"
        found = httpx.post(f"{url}/search", json={"query": "install", "top_k": 5, "mode": "keyword"}).json()
        assert [hit["source"]["uri"] for hit in found["results"]] == ["papers/methods.md"]
        assert httpx.get(f"{url}/health").json()["run_id"] == two_pipelines["papers"]
    finally:
        stopped = cli("serve", "stop", "--runs-dir", str(runs), "--port", str(port))
    assert stopped.returncode == 0, stopped.stderr


def test_mcp_latest_names_a_pipeline_and_a_bare_latest_lists_them(two_pipelines):
    runs = two_pipelines["runs"]
    root = two_pipelines["root"]
    query = {"query": "install", "mode": "keyword", "top_k": 5}

    async def main() -> tuple[CallToolResult, CallToolResult, CallToolResult]:
        async with stdio_session("--runs-dir", str(runs), cwd=root, env=server_env()) as session:
            ambiguous = await session.call_tool("search_docs", query)
            named = await session.call_tool("search_docs", {**query, "run_id": "latest:papers"})
        async with stdio_session("--runs-dir", str(runs), "--run-id", "latest:handbook", cwd=root) as session:
            pinned = await session.call_tool("search_docs", query)
        return ambiguous, named, pinned

    ambiguous, named, pinned = anyio.run(main)
    assert error_code(ambiguous) == "CONFIG_INVALID"
    assert "latest:handbook" in json.dumps(structured(ambiguous))
    assert not named.is_error, texts(named)
    assert [hit["path"] for hit in structured(named)["results"]] == ["papers/methods.md"]
    assert not pinned.is_error, texts(pinned)
    assert [hit["path"] for hit in structured(pinned)["results"]] == ["handbook/install.md"]
