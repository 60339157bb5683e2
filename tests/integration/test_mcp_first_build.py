"""Docs mode's first build: search_docs answers while it runs (keyword from the committed chunks,
semantic over the vectors embedded so far, hybrid as keyword until every chunk has its vector),
says the index is still building, streams the build's progress to the client, and the finished
build is the run a plain pipeline run makes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp.client import Client

from indexfoundry import api
from indexfoundry.app.docs_index import DocsIndex, docs_config
from indexfoundry.errors import RunNotFound
from indexfoundry.pipeline.runs import list_runs
from indexfoundry.storage.layout import RunLayout
from indexfoundry.surfaces.mcp import ServerOptions, create_server
from tests.conftest import SAMPLE_DOCS
from tests.fakes import GatedEmbedder, RecordingEmbedder
from tests.integration.mcp_support import read_json, search_until_built, stdio_session, structured, texts
from tests.waiting import wait_for_async

BUILD_THREAD = "indexfoundry-docs-build"  # the thread the server's first build runs in
QUERY = {"query": "pip install virtual environment"}


def _topics(count: int) -> dict[str, str]:
    """Enough pages for more than one embedding batch (32 texts)."""
    return {
        f"topics/topic-{n:02d}.md": f"# Topic {n}\n\nThe sprocket number {n} is set with the dial {n * 7}.\n"
        for n in range(count)
    }


def test_search_answers_while_the_first_build_runs_says_so_and_streams_its_progress(tree, runs_dir: Path):
    docs = tree({**SAMPLE_DOCS, **_topics(40)})
    embedder = GatedEmbedder(BUILD_THREAD, open_batches=1)  # the build stops before its second batch
    server, source = create_server(
        ServerOptions(runs_dir=runs_dir, docs=docs, embedding_model="hash", embedder=embedder, watch=False)
    )
    notes: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    async def built() -> bool:
        return source.first_build() is None  # type: ignore[attr-defined]

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(server) as client:
            keyword = {**QUERY, "mode": "keyword"}
            out["keyword"] = await client.call_tool("search_docs", keyword, progress_callback=on_progress)
            assert await anyio.to_thread.run_sync(lambda: embedder.waiting.wait(60)), "the build never embedded"
            out["hybrid"] = await client.call_tool("search_docs", QUERY)
            out["semantic"] = await client.call_tool("search_docs", {**QUERY, "mode": "semantic"})
            out["page"] = await client.call_tool("get_page", {"path": "guide/install.md"})
            out["pages"] = await client.call_tool("list_pages", {})
            out["runs"] = [(item.run_id, item.status) for item in list_runs(runs_dir)]
            with pytest.raises(RunNotFound):
                api.resolve_run_id(runs_dir, "latest")  # what is being built is no run's 'latest' yet
            embedder.gate.set()
            assert await wait_for_async(built, timeout=120), "the first build did not finish"
            out["final"] = await client.call_tool("search_docs", QUERY)
        return out

    out = anyio.run(main)
    keyword, hybrid, final = (structured(out[k]) for k in ("keyword", "hybrid", "final"))
    building_run = keyword["run_id"]
    assert out["runs"] == [(building_run, "running")]
    # Keyword first: the committed chunks answer while no vector is needed.
    assert keyword["mode"] == "keyword" and keyword["results"][0]["path"] == "guide/install.md"
    assert keyword.get("indexed_at") is None
    assert "is still building" in texts(out["keyword"])[0]
    assert any("keyword search over all" in w for w in keyword["warnings"])
    assert notes and notes[0].startswith("the index is building")  # progress notifications of the build
    # Then semantic as vectors land, over the first batch's chunks; hybrid stays keyword until
    # every chunk has its vector (a half-embedded fusion would favour the embedded chunks).
    semantic = structured(out["semantic"])
    assert semantic["mode"] == "semantic" and semantic["run_id"] == building_run
    found = re.search(r"with (\d+) of (\d+) chunks embedded so far", " ".join(semantic["warnings"]))
    assert found and 0 < int(found[1]) < int(found[2]), semantic["warnings"]
    assert hybrid["mode"] == "keyword" and hybrid["run_id"] == building_run
    assert hybrid["results"][0]["path"] == "guide/install.md"
    assert any(f"until all are embedded ({found[1]} so far)" in w for w in hybrid["warnings"]), hybrid["warnings"]
    assert "is still building" in texts(out["hybrid"])[0]
    # Its pages are read from the run being built too.
    page, pages = structured(out["page"]), structured(out["pages"])
    assert page["run_id"] == pages["run_id"] == building_run and page["path"] == "guide/install.md"
    assert "still building" in texts(out["page"])[0] and "pip install sample" in texts(out["page"])[1]
    assert pages["total"] == 43
    # Once built, the same run answers as a finished run, without the notice.
    assert final["run_id"] == building_run and final["indexed_at"] and final["mode"] == "hybrid"
    assert not final.get("warnings") and "still building" not in texts(out["final"])[0]
    assert final["results"][0]["path"] == "guide/install.md"
    assert api.resolve_run_id(runs_dir, "latest") == building_run
    # The finished build's artifacts are those of a plain pipeline run of the same config.
    plain_runs = runs_dir.parent / "plain-runs"
    plain = api.pipeline_run(
        docs_config(docs.resolve(), plain_runs, "hash"), runs_dir=plain_runs, embedder=RecordingEmbedder()
    )
    ours, theirs = RunLayout(runs_dir / building_run), RunLayout(plain_runs / plain.run_id)
    for phase in ("connect", "extract", "normalize", "index", "serve"):
        mine, other = read_json(ours.manifest)["phases"][phase], read_json(theirs.manifest)["phases"][phase]
        assert mine["outputs"] == other["outputs"], phase
    assert ours.chunks.read_bytes() == theirs.chunks.read_bytes()
    assert ours.embeddings.read_bytes() == theirs.embeddings.read_bytes()


def test_a_query_arriving_as_the_server_starts_answers_from_the_first_build_not_after_it(tree, runs_dir: Path):
    # The moment between the build thread's start and its first build beginning: a query there
    # must wait for that build to begin (and read it), not take the index lock and wait for all of it.
    docs = tree({**SAMPLE_DOCS, **_topics(40)})
    embedder = GatedEmbedder(BUILD_THREAD, open_batches=1)
    index = DocsIndex(docs, runs_dir, embedding_model="hash", embedder=embedder)
    try:
        thread = index.start_build(BUILD_THREAD)
        build = index.first_build()  # asked at once, before the thread has done anything
        assert build is not None and build.run_id
        assert embedder.waiting.wait(60), "the build never embedded"
        assert index.first_build() is build and thread.is_alive()
        embedder.gate.set()
        thread.join(120)
        assert not thread.is_alive() and index.first_build() is None
        assert index.default_run() == build.run_id == api.resolve_run_id(runs_dir, "latest")
    finally:
        embedder.gate.set()
        index.stop()


@pytest.mark.slow
def test_the_real_server_answers_a_cold_agent_from_the_mkdocs_docs_before_its_first_build_ends(
    corpora: Path, tmp_path: Path
):
    docs = corpora / "markdown" / "mkdocs-1.4.2" / "docs"
    args = ("--docs", str(docs), "--runs-dir", str(tmp_path / "runs"), "--embedding-model", "hash")
    notes: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    async def main() -> tuple[Any, Any, Any]:
        async with stdio_session(*args, cwd=tmp_path) as session:
            query = {"query": "how do I add a custom theme"}
            first = await session.call_tool("search_docs", query, progress_callback=on_progress)
            built = await search_until_built(session, query)
            pages = await session.call_tool("list_pages", {"limit": 100})
            return first, built, pages

    first, built, pages = anyio.run(main)
    assert not first.is_error, texts(first)
    answer = structured(first)
    assert answer["results"] and answer["results"][0]["path"].startswith("user-guide/")
    if "still building" in texts(first)[0]:  # answered during the first build, as a cold agent is
        assert answer.get("indexed_at") is None and notes and notes[0].startswith("the index is building")
    assert structured(built)["run_id"] == answer["run_id"]
    listed = {p["path"] for p in structured(pages)["pages"]}
    assert "index.md" in listed and "CNAME" not in listed  # documents only
    assert not any(path.endswith((".png", ".svg", ".css")) for path in listed)
