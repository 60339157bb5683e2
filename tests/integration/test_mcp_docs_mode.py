"""Zero-config docs mode: build on first start, reuse later, refresh on change, re-embed only what changed."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from indexfoundry.app.docs_index import DocsIndex
from indexfoundry.pipeline.runs import list_runs
from indexfoundry.retrieval.service import SearchService
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp import ServerOptions, create_server
from tests.conftest import SAMPLE_DOCS
from tests.fakes import RecordingEmbedder
from tests.integration.mcp_support import (
    first_build_done,
    read_json,
    search_until_built,
    stdio_session,
    structured,
    texts,
)

NEW_THEME = (
    "---\ntitle: Theming\ntags: [ui]\n---\n# Theme\n\n## Changing the theme\n\n"
    "Set theme.palette to pick the theme colours and the fonts of every page.\n\n"
    "```yaml\n# not a heading\ntheme:\n  name: dark\n```\n"
)


def _chunk_texts(runs_dir: Path, run_id: str) -> dict[str, str]:
    return {
        row["content"]["text_hash"]: row["source"]["uri"] for row in iter_jsonl(RunLayout(runs_dir / run_id).chunks)
    }


def test_editing_one_file_reembeds_only_its_changed_chunks_and_search_sees_the_new_text(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    embedder = RecordingEmbedder()
    server, source = create_server(
        ServerOptions(runs_dir=runs_dir, docs=docs, embedding_model="hash", embedder=embedder, watch=False)
    )
    queries = ["change the theme colours", "theme palette fonts"]

    async def main():
        async with Client(server) as client:
            await first_build_done(source)
            first = await client.call_tool("search_docs", {"query": queries[0]})
            embedded_at_start = len(embedder.texts)
            embedder.calls.clear()
            (docs / "guide" / "theme.md").write_text(NEW_THEME, encoding="utf-8")
            second = await client.call_tool("search_docs", {"query": queries[1]})
            return first, embedded_at_start, second

    first, embedded_at_start, second = anyio.run(main)
    run_a, run_b = structured(first)["run_id"], structured(second)["run_id"]
    assert embedded_at_start > 1
    assert run_b != run_a or structured(second)["indexed_at"] != structured(first)["indexed_at"]
    assert "theme.palette" in "\n".join(texts(second))
    assert structured(second)["results"][0]["path"] == "guide/theme.md"

    indexed = [text for text in embedder.texts if text not in queries]
    assert indexed, "the changed chunk was embedded"
    assert all("theme.palette" in text for text in indexed), indexed
    old, new = _chunk_texts(runs_dir, run_a), _chunk_texts(runs_dir, run_b)
    changed = [h for h in new if h not in old]
    assert len(indexed) == len(changed) < len(new)
    assert {new[h] for h in changed} == {"docs/guide/theme.md"}  # stored uris keep the source name
    stats = read_json(RunLayout(runs_dir / run_b).manifest)["phases"]["index"]["stats"]
    assert stats["texts_embedded"] == len(indexed)


def test_deleting_a_file_removes_its_chunks_from_search_and_pages(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    server, source = create_server(ServerOptions(runs_dir=runs_dir, docs=docs, embedding_model="hash", watch=False))

    async def main():
        async with Client(server) as client:
            await first_build_done(source)
            before = await client.call_tool("list_pages", {})
            (docs / "guide" / "install.md").unlink()
            after = await client.call_tool("list_pages", {})
            search = await client.call_tool("search_docs", {"query": "pip install virtual environment", "top_k": 10})
            gone = await client.call_tool("get_page", {"path": "guide/install.md"})
            gone_full = await client.call_tool("get_page", {"path": "docs/guide/install.md"})
            return before, after, search, gone, gone_full

    before, after, search, gone, gone_full = anyio.run(main)
    assert "guide/install.md" in {p["path"] for p in structured(before)["pages"]}
    assert "guide/install.md" not in {p["path"] for p in structured(after)["pages"]}
    assert all(hit["path"] != "guide/install.md" for hit in structured(search)["results"])
    run_id = structured(after)["run_id"]
    assert "docs/guide/install.md" not in set(_chunk_texts(runs_dir, run_id).values())
    assert structured(gone)["error"]["code"] == "NOT_FOUND"
    assert structured(gone_full)["error"]["code"] == "NOT_FOUND"


def test_the_watcher_refreshes_the_index_when_a_file_changes(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    changed = threading.Event()
    index = DocsIndex(docs, runs_dir, embedding_model="hash", on_change=lambda run_id: changed.set())
    first = index.ensure_fresh()
    started = index.executor.pool.started
    index.start_watching()
    try:
        (docs / "guide" / "theme.md").write_text(NEW_THEME, encoding="utf-8")
        assert changed.wait(timeout=60), "no refresh after the file changed"
    finally:
        index.stop()
    assert index.refreshes == 2  # the first build, then one refresh after the change
    # The refresh extracted and chunked the changed file in a worker the first build started.
    assert started > 0 and index.executor.pool.started == started
    assert index.executor.pool.idle_pids() == []  # stop() closed the executor
    # Opening the new run for search validates only its new chunk records (docs-mode memos).
    old, new = (
        SearchService(RunLayout(runs_dir / first)).chunks,
        SearchService(RunLayout(runs_dir / index.run_id)).chunks,
    )
    shared = set(old) & set(new)
    assert shared and all(new[cid] is old[cid] for cid in shared)
    assert any("theme.palette" in new[cid].content.text for cid in set(new) - shared)
    assert index.run_id is not None and index.run_id != first  # a new run derived from the first
    chunks = [row["content"]["text"] for row in iter_jsonl(RunLayout(runs_dir / index.run_id).chunks)]
    assert any("theme.palette" in text for text in chunks)


@pytest.mark.slow
def test_docs_mode_builds_on_first_start_and_reuses_the_run_on_later_starts(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    runs = tmp_path / "runs"
    args = ("--docs", str(docs), "--runs-dir", str(runs), "--embedding-model", "hash")

    async def search() -> str:
        async with stdio_session(*args, cwd=tmp_path) as session:
            result = await search_until_built(session, {"query": "theme colours"})
            return str(structured(result)["run_id"])

    first = anyio.run(search)
    second = anyio.run(search)
    assert first == second
    assert [item.run_id for item in list_runs(runs)] == [first]
    assert "indexfoundry: embed" in (tmp_path / "server-stderr.log").read_text()


@pytest.mark.slow
def test_a_first_build_stopped_by_its_client_is_continued_by_the_next_start(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    runs = tmp_path / "runs"
    args = ("--docs", str(docs), "--runs-dir", str(runs), "--embedding-model", "hash")

    async def early() -> dict:
        async with stdio_session(*args, cwd=tmp_path) as session:
            # The first answer may come from what the build has indexed so far; the client leaves.
            result = await session.call_tool("search_docs", {"query": "theme colours"})
            assert not result.is_error, texts(result)
            return structured(result)

    async def built() -> dict:
        async with stdio_session(*args, cwd=tmp_path) as session:
            return structured(await search_until_built(session, {"query": "theme colours"}))

    first = anyio.run(early)
    later = anyio.run(built)
    assert later["run_id"] == first["run_id"]  # the same run: continued, not built again
    assert [(item.run_id, item.status) for item in list_runs(runs)] == [(first["run_id"], "completed")]


@pytest.mark.slow
def test_two_stdio_servers_over_one_runs_folder_both_answer(tree, tmp_path: Path):
    docs = tree(SAMPLE_DOCS)
    runs = tmp_path / "runs"
    args = ("--docs", str(docs), "--runs-dir", str(runs), "--embedding-model", "hash")
    answers: list[dict] = []

    async def one() -> None:
        async with stdio_session(*args, cwd=tmp_path) as session:
            answers.append(structured(await search_until_built(session, {"query": "pip install"})))

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    anyio.run(main)
    assert len(answers) == 2
    assert all(a["results"][0]["path"] == "guide/install.md" for a in answers)
    for item in list_runs(runs):
        assert item.status in ("completed", "partial")


def test_a_runs_folder_inside_the_docs_folder_is_neither_indexed_nor_a_change(tree):
    docs = tree(SAMPLE_DOCS)
    index = DocsIndex(docs, docs / "runs", embedding_model="hash")
    first = index.ensure_fresh()
    assert index.ensure_fresh() == first
    assert index.refreshes == 1
    uris = set(_chunk_texts(docs / "runs", first).values())
    assert uris and not any(uri.startswith("docs/runs/") for uri in uris)


def test_docs_mode_lists_the_documents_of_the_folder_not_its_other_files(tree, runs_dir: Path):
    files: dict[str, str | bytes] = {
        **SAMPLE_DOCS,
        "CNAME": "www.example.org\n",
        "css/extra.css": "body { color: #222; }\n",
        "js/site.js": "console.log('menu');\n",
        "img/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(64),
        "mkdocs.yml": "site_name: Sample\n",
        "api/notes.rst": "Notes\n=====\n\nThe reference notes.\n",
        "legacy/page.HTML": "<html><head><title>Legacy</title></head><body><p>Old page.</p></body></html>",
    }
    docs = tree(files)
    server, _ = create_server(ServerOptions(runs_dir=runs_dir, docs=docs, embedding_model="hash", watch=False))

    async def main():
        async with Client(server) as client:
            listed = await client.call_tool("list_pages", {})
            cname = await client.call_tool("get_page", {"path": "CNAME"})
            return listed, cname

    listed, cname = anyio.run(main)
    assert [p["path"] for p in structured(listed)["pages"]] == [
        "api/notes.rst",
        "guide/install.md",
        "guide/theme.md",
        "index.md",
        "legacy/page.HTML",
    ]
    assert structured(cname)["error"]["code"] == "NOT_FOUND"
    raw = [row["uri"] for row in iter_jsonl(RunLayout(runs_dir / structured(listed)["run_id"]).raw_manifest)]
    assert raw == sorted(raw) and not any(uri.endswith(("CNAME", ".css", ".js", ".png", ".yml")) for uri in raw)
