"""The MCP Inspector CLI (npm @modelcontextprotocol/inspector, pinned in .ci/run) as a second,
independent client: it lists the tools and calls search_docs over stdio."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_DOCS
from tests.integration.mcp_support import server_env

INSPECTOR_VERSION = "2.12.0"  # keep in step with .ci/run
INSPECTOR = REPO / ".ci" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture
def inspector() -> Path:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the MCP Inspector CLI needs Node.js")
    if not INSPECTOR.exists():
        pytest.skip(
            "MCP Inspector CLI not installed: run "
            f"'npm install --prefix .ci --no-save @modelcontextprotocol/inspector@{INSPECTOR_VERSION}' (.ci/run does)"
        )
    return INSPECTOR


def _inspect(inspector: Path, tmp_path: Path, docs: Path, *method: str) -> dict:
    command = [
        str(inspector),
        "--cli",
        "--cwd",
        str(tmp_path),
        sys.executable,
        "-m",
        "indexfoundry",
        "mcp",
        "--docs",
        str(docs),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--embedding-model",
        "hash",
        *method,
    ]
    env = server_env(HOME=str(tmp_path / "home"))  # the Inspector keeps a catalog under $HOME
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict = json.loads(proc.stdout)
    return data


def test_inspector_lists_the_tools_and_calls_search_docs_over_stdio(inspector: Path, tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    listed = _inspect(inspector, tmp_path, docs, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"search_docs", "get_page", "get_section", "list_pages"} <= names
    called = _inspect(
        inspector,
        tmp_path,
        docs,
        "--method",
        "tools/call",
        "--tool-name",
        "search_docs",
        "--tool-arg",
        "query=how do I change the theme colours",
    )
    assert not called.get("isError"), called
    assert called["structuredContent"]["results"][0]["path"] == "guide/theme.md"  # relative to --docs
    assert any("Set theme.name" in block.get("text", "") for block in called["content"])
