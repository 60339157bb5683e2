"""An agent's context is precious: what `tools/list` costs, measured with the official SDK client.

Budgets: the docs-mode listing under 8,000 characters; the full listing (every pipeline tool
with the agent's own input models) no larger than the 39,263 characters it took when agents were
listed the operator's full configs (38,134 since). Every argument another change adds to a tool
is counted here too, so the budget keeps holding as the tools grow. The sizes docs/mcp.md prints
are the ones measured here (``tests/figures.py``: ``pytest --update-figures`` rewrites them).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from indexfoundry.surfaces.mcp import ServerOptions, create_server
from tests.conftest import SAMPLE_DOCS
from tests.fakes import RecordingEmbedder
from tests.figures import documented
from tests.integration.mcp_support import RETRIEVAL_TOOLS, stdio_session, structured, texts

DOCS_BUDGET = 8_000
FULL_BUDGET = 39_263  # the full listing before agents had input models of their own


def _listing_size(tools: list[Any]) -> int:
    """Characters of the tools as the client receives them (what goes into the model's context)."""
    return sum(len(json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True))) for t in tools)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _listings(tmp_path: Path, *args: str) -> list[Any]:
    async def main() -> list[Any]:
        async with stdio_session(*args, cwd=tmp_path) as session:
            return list((await session.list_tools()).tools)

    return anyio.run(main)


def test_docs_mode_lists_only_the_docs_tools_within_8000_characters(tree, tmp_path: Path, update_figures: bool):
    docs = tree(SAMPLE_DOCS)
    tools = _listings(tmp_path, "--docs", str(docs), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash")
    assert sorted(t.name for t in tools) == sorted(RETRIEVAL_TOOLS)
    assert _listing_size(tools) < DOCS_BUDGET, _listing_size(tools)
    documented("mcp.docs_tools", len(tools), update=update_figures)
    documented("mcp.docs_listing", _listing_size(tools), update=update_figures)


def test_a_library_server_lists_only_its_docs_tools_within_8000_characters(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    args = ("--library", f"sample@1.0={docs}", "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash")
    tools = _listings(tmp_path, *args)
    assert not any(t.name.startswith("indexfoundry_") for t in tools)
    assert _listing_size(tools) < DOCS_BUDGET, _listing_size(tools)


def test_the_full_listing_is_within_budget_without_output_schemas_or_repeated_defs(
    tree, tmp_path: Path, update_figures: bool
):
    docs = tree(SAMPLE_DOCS)
    args = ("--docs", str(docs), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash", "--tools", "all")
    tools = _listings(tmp_path, *args)
    names = {t.name for t in tools}
    assert set(RETRIEVAL_TOOLS) < names and "indexfoundry_pipeline_run" in names
    assert _listing_size(tools) <= FULL_BUDGET, _listing_size(tools)
    documented("mcp.full_listing", _listing_size(tools), update=update_figures)
    for tool in tools:
        assert tool.output_schema is None, tool.name
        schema = tool.input_schema
        assert not any(isinstance(v, dict) and "title" in v for v in schema.get("properties", {}).values())
        refs = _refs(schema)
        for name in schema.get("$defs", {}):
            assert refs.count(f"#/$defs/{name}") > 1, (tool.name, name)  # a def used once is inlined


def test_without_docs_mode_every_tool_is_listed(tmp_path: Path):
    tools = _listings(tmp_path, "--runs-dir", str(tmp_path / "runs"))
    names = {t.name for t in tools}
    assert set(RETRIEVAL_TOOLS) < names and "indexfoundry_run_status" in names


def test_a_summarised_schema_names_the_resource_holding_the_whole_schema(tmp_path: Path):
    async def main() -> tuple[Any, str]:
        async with stdio_session("--runs-dir", str(tmp_path / "runs"), cwd=tmp_path) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            full = await session.read_resource("indexfoundry://schemas/indexfoundry_pipeline_run")
            return tools["indexfoundry_pipeline_run"], full.contents[0].text  # type: ignore[union-attr]

    tool, full = anyio.run(main)
    listed = tool.input_schema
    assert "indexfoundry://schemas/indexfoundry_pipeline_run" in listed["description"]
    assert "{type: folder, path}" in listed["properties"]["connect"]["description"]
    whole = json.loads(full)
    assert "sources" in whole["properties"]["connect"]["properties"]
    assert len(full) > len(json.dumps(listed))


class GatedEmbedder(RecordingEmbedder):
    """Blocks while embedding a text containing ``marker`` until ``release`` is set: a slow rebuild."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.blocked = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: list[str]):  # type: ignore[no-untyped-def]
        if any(self.marker in t for t in texts):
            self.blocked.set()
            self.release.wait(timeout=120)
        return super().embed(texts)


def test_a_query_during_a_rebuild_answers_from_the_previous_run_and_says_it_is_stale(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    embedder = GatedEmbedder("theme.palette")
    server, source = create_server(
        ServerOptions(runs_dir=runs_dir, docs=docs, embedding_model="hash", embedder=embedder, watch=False)
    )

    async def main() -> tuple[Any, Any, float]:
        async with Client(server) as client:
            first = await client.call_tool("search_docs", {"query": "change the theme colours"})
            (docs / "guide" / "theme.md").write_text(
                "# Theme\n\n## Changing the theme\n\nSet theme.palette to pick colours.\n", encoding="utf-8"
            )
            rebuild = threading.Thread(target=source.ensure_fresh)  # type: ignore[attr-defined]
            rebuild.start()
            assert await anyio.to_thread.run_sync(embedder.blocked.wait, 60)
            started = time.monotonic()
            during = await client.call_tool("search_docs", {"query": "change the theme colours"})
            waited = time.monotonic() - started
            embedder.release.set()
            await anyio.to_thread.run_sync(rebuild.join, 60)
            return first, during, waited

    first, during, waited = anyio.run(main)
    assert not during.is_error, texts(during)
    assert structured(during)["run_id"] == structured(first)["run_id"]  # the previous run answered
    assert "being rebuilt" in texts(during)[0]
    assert waited < 30  # it did not wait for the rebuild (which is held until after this call)
