"""The MCP server over stdio, driven by the official SDK client (a real subprocess)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from jsonschema import Draft202012Validator

from indexfoundry import api
from indexfoundry.app.tools.registry import load_tools
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS, folder_config
from tests.integration.mcp_support import (
    CATALOGUE_TOOLS,
    RETRIEVAL_TOOLS,
    error_code,
    read_json,
    server_command,
    server_env,
    stdio_session,
    structured,
    texts,
)


@pytest.fixture
def built(tree, runs_dir: Path) -> tuple[Path, str]:
    """A run over the sample docs, built through the library with the hash embedder."""
    docs = tree(SAMPLE_DOCS)
    out = api.pipeline_run(folder_config(docs), runs_dir=runs_dir)
    assert out.status == "completed"
    return runs_dir, out.run_id


def test_stdio_server_lists_every_registered_tool_with_valid_strict_schemas(tmp_path: Path, runs_dir: Path):
    async def main() -> list:
        async with stdio_session("--runs-dir", str(runs_dir), cwd=tmp_path) as session:
            return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(main)}
    registry = load_tools()
    assert set(tools) == set(registry) | set(RETRIEVAL_TOOLS)
    for name, tool in tools.items():
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema.get("additionalProperties") is False, name
        if tool.output_schema is not None:
            Draft202012Validator.check_schema(tool.output_schema)
        spec = registry.get(name)
        if spec is not None:
            hints = tool.annotations
            assert hints is not None
            assert hints.read_only_hint is spec.annotations.read_only
            assert hints.destructive_hint is spec.annotations.destructive
            assert hints.idempotent_hint is spec.annotations.idempotent
            assert hints.open_world_hint is spec.annotations.open_world
    for name in RETRIEVAL_TOOLS:
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].annotations.destructive_hint is False


def test_every_catalogue_tool_is_exposed(tmp_path: Path, runs_dir: Path):
    async def main() -> set[str]:
        async with stdio_session("--runs-dir", str(runs_dir), cwd=tmp_path) as session:
            return {tool.name for tool in (await session.list_tools()).tools}

    names = anyio.run(main)
    missing = [name for name in CATALOGUE_TOOLS if name not in names]
    assert not missing, f"catalogue tools not registered: {missing}"


@pytest.mark.slow
def test_pipeline_run_tool_builds_a_run_with_progress_that_search_docs_then_finds(tmp_path: Path, tree):
    docs = tree(SAMPLE_DOCS)
    runs = tmp_path / "runs"
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def main() -> tuple[dict, dict]:
        async with stdio_session("--runs-dir", str(runs), "--root", str(tmp_path), cwd=tmp_path) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "indexfoundry_pipeline_run" in names, "indexfoundry_pipeline_run is not registered yet"
            run = await session.call_tool(
                "indexfoundry_pipeline_run", folder_config(docs), progress_callback=on_progress
            )
            assert not run.is_error, texts(run)
            built = structured(run)
            found = await session.call_tool(
                "search_docs", {"query": "change the theme colours", "run_id": built["run_id"]}
            )
            return built, structured(found)

    built, found = anyio.run(main)
    assert built["status"] == "completed"
    assert found["run_id"] == built["run_id"]
    assert found["results"][0]["path"] == "docs/guide/theme.md"
    assert progress, "a long-running tool reports MCP progress notifications"
    values = [value for value, _, _ in progress]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_search_page_and_section_answer_from_the_run_and_say_when_it_was_indexed(tmp_path: Path, built):
    runs_dir, run_id = built
    manifest = read_json(RunLayout(runs_dir / run_id).manifest)
    indexed_at = manifest["phases"]["index"]["completed_at"]

    async def main():
        async with stdio_session("--runs-dir", str(runs_dir), cwd=tmp_path) as session:
            search = await session.call_tool("search_docs", {"query": "change the theme colours", "top_k": 3})
            page = await session.call_tool("get_page", {"path": "docs/guide/install.md"})
            section = await session.call_tool(
                "get_section", {"path": "docs/guide/install.md", "heading": "Installation > Using pip"}
            )
            pages = await session.call_tool("list_pages", {})
            resources = await session.list_resources()
            resource = await session.read_resource("indexfoundry://pages/docs/guide/theme.md")
            return search, page, section, pages, resources, resource

    search, page, section, pages, resources, resource = anyio.run(main)
    for result in (search, page, section, pages):
        assert not result.is_error, texts(result)
        data = structured(result)
        assert data["run_id"] == run_id
        assert data["indexed_at"] == indexed_at
    hits = structured(search)["results"]
    assert hits[0]["path"] == "docs/guide/theme.md"
    assert hits[0]["breadcrumb"] == "Theme > Changing the theme"
    body = "\n".join(texts(search))
    assert "Set theme.name in the config file" in body
    assert run_id in texts(search)[0] and indexed_at in texts(search)[0]
    # The chunk text is in the text part only: the structured part holds metadata.
    assert "Set theme.name" not in json.dumps(structured(search))
    assert "Run pip install sample" in texts(page)[-1] and "Python 3.11" in texts(page)[-1]
    assert texts(section)[-1].startswith("## Using pip")
    assert "Python 3.11" not in texts(section)[-1]
    assert structured(section)["breadcrumb"] == "Installation > Using pip"
    assert "docs/guide/theme.md" in {p["path"] for p in structured(pages)["pages"]}
    assert "docs/guide/theme.md — Theming" in texts(pages)[-1].splitlines()
    assert "Theming" not in json.dumps(structured(pages))  # titles are in the text part only
    assert "indexfoundry://pages/docs/guide/theme.md" in {str(r.uri) for r in resources.resources}
    assert "Set theme.name" in resource.contents[0].text


def test_bad_run_ids_traversal_paths_and_unknown_keys_are_tool_errors_with_codes(tmp_path: Path, built):
    runs_dir, run_id = built

    async def main() -> dict[str, str]:
        async with stdio_session("--runs-dir", str(runs_dir), cwd=tmp_path) as session:
            calls = {
                "malformed run id": ("search_docs", {"query": "x", "run_id": "../" + run_id}),
                "unknown run id": ("search_docs", {"query": "x", "run_id": "01900000-0000-7000-8000-000000000000"}),
                "traversal page": ("get_page", {"path": "../../../etc/passwd"}),
                "absolute page": ("get_page", {"path": "/etc/passwd"}),
                "unknown section": ("get_section", {"path": "docs/index.md", "heading": "Nope"}),
                "unknown key": ("search_docs", {"query": "x", "top_kk": 3}),
                "run status of a bad id": ("indexfoundry_run_status", {"run_id": "not-a-uuid"}),
            }
            registered = {tool.name for tool in (await session.list_tools()).tools}
            codes = {}
            for label, (name, args) in calls.items():
                if name not in registered:
                    continue
                codes[label] = error_code(await session.call_tool(name, args))
            return codes

    codes = anyio.run(main)
    assert codes["malformed run id"] == "RUN_NOT_FOUND"
    assert codes["unknown run id"] == "RUN_NOT_FOUND"
    assert codes["traversal page"] == "NOT_FOUND"
    assert codes["absolute page"] == "NOT_FOUND"
    assert codes["unknown section"] == "NOT_FOUND"
    assert codes["unknown key"] == "CONFIG_INVALID"
    if "run status of a bad id" in codes:
        assert codes["run status of a bad id"] == "RUN_NOT_FOUND"


@pytest.mark.parametrize(
    "model", [pytest.param("hash", marks=pytest.mark.slow), pytest.param("local", marks=pytest.mark.model)]
)
def test_stdout_carries_nothing_but_protocol_messages(tmp_path: Path, tree, model: str):
    docs = tree(SAMPLE_DOCS)
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": "pip"}},
        },
    ]
    with subprocess.Popen(
        server_command(
            "--docs", str(docs), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", model, "--no-watch"
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=server_env(),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        lines: list[str] = []
        while not any('"id":2' in line.replace(" ", "") for line in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        proc.stdin.close()  # end of the session: the server exits
        lines += proc.stdout.readlines()
        stderr = proc.stderr.read()
        proc.wait(timeout=60)
    parsed = [json.loads(line) for line in lines if line.strip()]  # every stdout line is a JSON-RPC message
    assert parsed, stderr
    assert all(m.get("jsonrpc") == "2.0" for m in parsed)
    answer = next(m for m in parsed if m.get("id") == 2)
    assert answer["result"]["structuredContent"]["results"][0]["path"] == "guide/install.md"  # docs mode: relative
    assert "indexfoundry: embed" in stderr  # indexing progress went to stderr
