"""The MCP server over Streamable HTTP (a real uvicorn server on 127.0.0.1), with the SDK client."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from indexfoundry import api
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.integration.mcp_support import (
    RETRIEVAL_TOOLS,
    error_code,
    free_port,
    http_server,
    http_session,
    server_env,
    structured,
    texts,
)

TOKEN = "s3cret-token-for-tests-only-0123456789"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def served(tree, tmp_path: Path, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    port = free_port()
    env = server_env(IF_TEST_TOKEN=TOKEN)
    with http_server(
        "--runs-dir", str(runs_dir), "--token-env", "IF_TEST_TOKEN", cwd=tmp_path, port=port, env=env
    ) as url:
        yield url, out.run_id


def test_http_client_with_the_token_lists_tools_searches_and_reads_sections(served):
    url, run_id = served

    async def main():
        async with http_session(url, TOKEN) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            search = await session.call_tool("search_docs", {"query": "install with pip in a virtual environment"})
            section = await session.call_tool(
                "get_section", {"path": "docs/guide/theme.md", "heading": "Changing the theme"}
            )
            bad_run = await session.call_tool("get_page", {"path": "docs/index.md", "run_id": "x" * 36})
            traversal = await session.call_tool("get_page", {"path": "docs/../../../../etc/passwd", "run_id": run_id})
            return tools, search, section, bad_run, traversal

    tools, search, section, bad_run, traversal = anyio.run(main)
    assert set(RETRIEVAL_TOOLS) <= tools
    assert structured(search)["run_id"] == run_id
    assert structured(search)["results"][0]["path"] == "docs/guide/install.md"
    assert "Set theme.name" in texts(section)[-1]
    assert error_code(bad_run) == "RUN_NOT_FOUND"
    assert error_code(traversal) == "NOT_FOUND"


def test_http_refuses_requests_without_the_bearer_token(served):
    url, _ = served
    response = httpx.post(url, json=INIT, headers=ACCEPT, timeout=30)
    assert response.status_code == 401
    wrong = httpx.post(url, json=INIT, headers={**ACCEPT, "Authorization": "Bearer wrong"}, timeout=30)
    assert wrong.status_code == 401


def test_http_refuses_foreign_origins_against_dns_rebinding(served):
    url, _ = served
    auth = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
    evil = httpx.post(url, json=INIT, headers={**auth, "Origin": "http://evil.example"}, timeout=30)
    assert evil.status_code == 403
    rebound = httpx.post(url, json=INIT, headers={**auth, "Host": "evil.example:80"}, timeout=30)
    assert rebound.status_code == 421
    local = httpx.post(url, json=INIT, headers={**auth, "Origin": "http://localhost:3000"}, timeout=30)
    assert local.status_code == 200


def test_token_env_that_is_not_set_is_a_config_error(tmp_path: Path):
    import subprocess

    from tests.integration.mcp_support import server_command

    proc = subprocess.run(
        server_command("--http", "--port", str(free_port()), "--token-env", "IF_TEST_TOKEN_UNSET"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=server_env(),
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("CONFIG_INVALID")
    assert "Traceback" not in proc.stderr


def test_metrics_count_tool_calls_by_outcome_and_need_the_token(served, runs_dir: Path):
    from prometheus_client.parser import text_string_to_metric_families

    url, run_id = served
    metrics_url = url.removesuffix("/mcp") + "/metrics"
    assert httpx.get(metrics_url, timeout=30).status_code == 401

    async def main():
        async with http_session(url, TOKEN) as session:
            for query in ("install with pip", "change the theme"):
                await session.call_tool("search_docs", {"query": query})
            await session.call_tool("get_page", {"path": "docs/index.md", "run_id": "x" * 36})

    anyio.run(main)
    response = httpx.get(metrics_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert response.status_code == 200
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }
    calls = "indexfoundry_mcp_tool_calls_total"
    assert samples[(calls, (("outcome", "ok"), ("tool", "search_docs")))] == 2
    assert samples[(calls, (("outcome", "RUN_NOT_FOUND"), ("tool", "get_page")))] == 1
    assert samples[("indexfoundry_mcp_tool_duration_seconds_count", (("tool", "search_docs"),))] == 2
    assert samples[("indexfoundry_served_run_info", (("run_id", run_id),))] == 1
    status = api.status(run_id, runs_dir=runs_dir)
    assert samples[("indexfoundry_served_chunks", ())] == status.totals.chunks_created
    requests = [value for (name, labels), value in samples.items() if name == "indexfoundry_mcp_http_requests_total"]
    assert sum(requests) >= 4  # initialize, the calls, the refused scrape
