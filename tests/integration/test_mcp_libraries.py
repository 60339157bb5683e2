"""Many libraries, many versions, one MCP server: the real CLI over stdio and in process,
with the official SDK client."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from indexfoundry import api
from indexfoundry.app.libraries import LibraryRegistry, parse_library_flag
from indexfoundry.storage.atomic import read_json
from indexfoundry.storage.layout import RunLayout, is_run_id
from indexfoundry.surfaces.mcp import ServerOptions, create_server
from tests.conftest import write_tree
from tests.integration.connect_servers import send, serve_script
from tests.integration.mcp_support import error_code, server_env, stdio_session, structured, texts
from tests.waiting import wait_for_async

TOOLS = {"list_libraries", "search_docs", "get_page", "get_section", "list_pages"}
LISTING_BUDGET = 8000  # the docs-mode tool listing budget


def _docs(root: Path, library: str, version: str) -> Path:
    return write_tree(
        root / f"{library}-{version}",
        {
            "install.md": (
                f"# Installing {library}\n\n## Requirements\n\n{library} {version} needs a calibrated flux sprocket "
                f"and the {library}-{version} installer.\n\n## Steps\n\nRun the {library} {version} installer twice.\n"
            ),
            "usage.md": f"# Using {library}\n\nCall {library}.start() from your code ({library} version {version}).\n",
        },
    )


def _config(folder: Path) -> dict[str, Any]:
    return {
        "connect": {"sources": [{"type": "folder", "path": str(folder), "glob": "**/*.md"}]},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_model": "hash"},
    }


@pytest.mark.slow
def test_two_libraries_with_two_versions_each_are_served_with_versions_ranges_and_labels(tmp_path: Path):
    runs = tmp_path / "runs"
    widget_cfg = tmp_path / "widget-2.0.json"
    widget_cfg.write_text(json.dumps(_config(_docs(tmp_path, "widget", "2.0"))), encoding="utf-8")
    gadget_run = api.pipeline_run(_config(_docs(tmp_path, "gadget", "1.4")), runs_dir=runs).run_id
    flags = [
        f"--library=widget@1.0={_docs(tmp_path, 'widget', '1.0')}",  # a docs folder
        f"--library=widget@2.0={widget_cfg}",  # a pipeline config
        f"--library=gadget@1.4={gadget_run}",  # a run id
        f"--library=gadget@2.1={_docs(tmp_path, 'gadget', '2.1')}",
    ]

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        args = ["--runs-dir", str(runs), "--embedding-model", "hash", *flags]
        async with stdio_session(*args, cwd=tmp_path, env=server_env()) as session:
            listing = await session.list_tools()
            out["tools"] = {tool.name for tool in listing.tools}
            # What an agent's context holds: names, descriptions, input schemas, annotations (no output
            # schemas: the compact listing leaves them out).
            out["listing_chars"] = sum(
                len(json.dumps(t.model_dump(mode="json", exclude_none=True, exclude={"output_schema"})))
                for t in listing.tools
            )
            out["libraries"] = structured(await session.call_tool("list_libraries", {}))["libraries"]
            query = {"query": "installer flux sprocket requirements"}
            for version in ("1.x", ">=1 <2", "latest", "2", "1.0"):
                result = await session.call_tool("search_docs", {**query, "library": "widget", "version": version})
                out[f"widget {version}"] = structured(result)
            out["all"] = await session.call_tool("search_docs", {**query, "top_k": 10})
            out["page"] = await session.call_tool(
                "get_page", {"library": "gadget", "version": "1.x", "path": "install.md"}
            )
            out["section"] = await session.call_tool(
                "get_section", {"library": "gadget", "path": "install.md", "heading": "Steps"}
            )
            out["pages"] = structured(await session.call_tool("list_pages", {"library": "widget", "version": "2.0"}))
            out["no library"] = error_code(await session.call_tool("search_docs", {**query, "library": "nope"}))
            out["no version"] = error_code(
                await session.call_tool("search_docs", {**query, "library": "gadget", "version": "9.x"})
            )
        return out

    out = anyio.run(main)
    assert out["tools"] == TOOLS
    assert out["listing_chars"] <= LISTING_BUDGET
    listed = [(lib["name"], lib["version"], lib["latest"], lib["pages"]) for lib in out["libraries"]]
    assert listed == [
        ("gadget", "2.1", True, 2),
        ("gadget", "1.4", False, 2),
        ("widget", "2.0", True, 2),
        ("widget", "1.0", False, 2),
    ]
    assert next(lib["run_id"] for lib in out["libraries"] if lib["version"] == "1.4") == gadget_run
    for version, expected in (("1.x", "1.0"), (">=1 <2", "1.0"), ("latest", "2.0"), ("2", "2.0"), ("1.0", "1.0")):
        answer = out[f"widget {version}"]
        assert [s["version"] for s in answer["searched"]] == [expected], version
        assert answer["results"] and {(r["library"], r["version"]) for r in answer["results"]} == {("widget", expected)}
    everything = structured(out["all"])
    assert [(s["library"], s["version"]) for s in everything["searched"]] == [("gadget", "2.1"), ("widget", "2.0")]
    assert {(r["library"], r["version"]) for r in everything["results"]} == {("gadget", "2.1"), ("widget", "2.0")}
    assert all(
        f"{r['library']}@{r['version']} · {r['path']}" in "\n".join(texts(out["all"])) for r in everything["results"]
    )
    page = structured(out["page"])
    assert (page["library"], page["version"], page["run_id"]) == ("gadget", "1.4", gadget_run)
    assert "gadget 1.4 needs a calibrated flux sprocket" in "\n".join(texts(out["page"]))
    assert structured(out["section"])["version"] == "2.1"
    assert "Run the gadget 2.1 installer twice." in "\n".join(texts(out["section"]))
    assert [p["path"] for p in out["pages"]["pages"]] == ["install.md", "usage.md"]
    assert {r["path"] for r in everything["results"]} <= {"install.md", "usage.md"}
    assert out["no library"] == "NOT_FOUND" and out["no version"] == "NOT_FOUND"


@pytest.mark.slow
def test_the_same_page_has_the_same_path_in_every_version_of_a_library(tmp_path: Path):
    for folder, word in (("w1", "one"), ("w2", "two")):
        pages = {"install.md": f"# Install\n\nPip install widget {word}.\n", "guide/use.md": f"# Use\n\n{word}.\n"}
        write_tree(tmp_path / folder, pages)
    args = ["--runs-dir", "runs", "--embedding-model", "hash", "--library", "widget@1.0=./w1", "--library"]

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_session(*args, "widget@2.0=./w2", cwd=tmp_path, env=server_env()) as session:
            for version in ("1.0", "2.0"):
                page = {"library": "widget", "version": version, "path": "install.md"}
                out[f"page {version}"] = await session.call_tool("get_page", page)
                section = {"library": "widget", "version": version, "path": "guide/use.md", "heading": "Use"}
                out[f"section {version}"] = await session.call_tool("get_section", section)
                listing = {"library": "widget", "version": version}
                out[f"pages {version}"] = structured(await session.call_tool("list_pages", listing))
                guide = await session.call_tool("list_pages", {**listing, "prefix": "guide/"})
                out[f"guide {version}"] = structured(guide)
                query = {"query": "pip install widget", "library": "widget", "version": version}
                out[f"search {version}"] = structured(await session.call_tool("search_docs", query))
            stored = {"library": "widget", "version": "1.0", "path": "w1/install.md"}
            out["stored"] = await session.call_tool("get_page", stored)
            out["missing"] = await session.call_tool("get_page", {"library": "widget", "path": "use.md"})
        return out

    out = anyio.run(main)
    for version, word in (("1.0", "one"), ("2.0", "two")):
        page = out[f"page {version}"]
        assert not page.is_error, texts(page)
        assert structured(page)["path"] == "install.md" and f"Pip install widget {word}." in texts(page)[1]
        assert structured(out[f"section {version}"])["path"] == "guide/use.md"
        assert [p["path"] for p in out[f"pages {version}"]["pages"]] == ["guide/use.md", "install.md"]
        assert [p["path"] for p in out[f"guide {version}"]["pages"]] == ["guide/use.md"]
        assert out[f"search {version}"]["results"][0]["path"] == "install.md"
    assert structured(out["stored"])["path"] == "install.md"  # the stored form is accepted too
    assert error_code(out["missing"]) == "NOT_FOUND"
    assert "Did you mean: guide/use.md" in texts(out["missing"])[0]


def test_a_library_removed_from_libraries_yaml_is_no_longer_served(tmp_path: Path, runs_dir: Path):
    one = api.pipeline_run(_config(_docs(tmp_path, "widget", "1.0")), runs_dir=runs_dir).run_id
    two = api.pipeline_run(_config(_docs(tmp_path, "widget", "2.0")), runs_dir=runs_dir).run_id
    spec = tmp_path / "libraries.yaml"
    spec.write_text(
        "libraries:\n"
        f"  - {{name: widget, version: '1.0', source: {one}}}\n"
        f"  - {{name: widget, version: '2.0', source: {two}}}\n",
        encoding="utf-8",
    )
    server, _ = create_server(ServerOptions(runs_dir=runs_dir, libraries_file=spec, embedding_model="hash"))

    async def main() -> tuple[Any, ...]:
        async with Client(server) as client:
            before = await client.call_tool("list_libraries", {})
            latest = await client.call_tool("search_docs", {"query": "installer", "library": "widget"})
            spec.write_text(f"libraries:\n  - {{name: widget, version: '1.0', source: {one}}}\n", encoding="utf-8")
            after = await client.call_tool("list_libraries", {})
            now_latest = await client.call_tool("search_docs", {"query": "installer", "library": "widget"})
            gone = await client.call_tool("get_page", {"library": "widget", "version": "2.0", "path": "install.md"})
            return before, latest, after, now_latest, gone

    before, latest, after, now_latest, gone = anyio.run(main)
    assert [lib["version"] for lib in structured(before)["libraries"]] == ["2.0", "1.0"]
    assert structured(latest)["searched"][0]["version"] == "2.0"
    assert [lib["version"] for lib in structured(after)["libraries"]] == ["1.0"]
    assert structured(now_latest)["searched"][0]["run_id"] == one
    assert error_code(gone) == "NOT_FOUND"


def test_a_library_served_from_a_config_file_is_rebuilt_when_the_file_changes(tmp_path: Path, runs_dir: Path):
    config = tmp_path / "widget.json"
    config.write_text(json.dumps(_config(_docs(tmp_path, "widget", "1.0"))), encoding="utf-8")
    spec = tmp_path / "libraries.yaml"
    spec.write_text(f"libraries:\n  - {{name: widget, version: '1.0', source: {config.name}}}\n", encoding="utf-8")
    server, _ = create_server(ServerOptions(runs_dir=runs_dir, libraries_file=spec, embedding_model="hash"))

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            before = await client.call_tool("list_pages", {"library": "widget"})
            config.write_text(json.dumps(_config(_docs(tmp_path, "widget", "1.0.1"))), encoding="utf-8")
            after = await client.call_tool("list_pages", {"library": "widget"})
            return before, after

    before, after = anyio.run(main)
    # The rebuilt version reads another folder; its pages keep their paths.
    assert structured(before)["pages"][0]["path"] == structured(after)["pages"][0]["path"] == "install.md"
    assert structured(after)["run_id"] != structured(before)["run_id"]


def _long_docs(root: Path, library: str) -> Path:
    sections = "".join(
        f"## Step {n}\n\n"
        + f"The {library} installer step {n} checks the flux sprocket calibration. " * (3 + 4 * n)
        + "\n\n"
        for n in range(6)
    )
    return write_tree(root / f"{library}-long", {"install.md": f"# Installing {library}\n\n{sections}"})


def test_library_search_pages_by_tokens_and_the_pages_join_into_the_whole_answer(tmp_path: Path, runs_dir: Path):
    spec = tmp_path / "libraries.yaml"
    runs = [api.pipeline_run(_config(_long_docs(tmp_path, name)), runs_dir=runs_dir).run_id for name in ("a", "b")]
    spec.write_text(
        "libraries:\n"
        + "".join(f"  - {{name: {n}, version: '1.0', source: {r}}}\n" for n, r in zip("ab", runs, strict=True)),
        encoding="utf-8",
    )
    server, _ = create_server(ServerOptions(runs_dir=runs_dir, libraries_file=spec, embedding_model="hash"))
    query = {"query": "installer flux sprocket calibration step", "top_k": 12}

    async def main() -> tuple[Any, list[Any], Any]:
        async with Client(server) as client:
            whole = await client.call_tool("search_docs", {**query, "max_tokens": 20_000})
            pages, cursor = [], None
            while len(pages) < 40:
                page = await client.call_tool("search_docs", {**query, "max_tokens": 600, "cursor": cursor})
                pages.append(page)
                cursor = structured(page).get("next_cursor")
                if cursor is None:
                    break
            again = await client.call_tool(
                "search_docs", {**query, "max_tokens": 600, "cursor": structured(pages[0])["next_cursor"]}
            )
            other = await client.call_tool(
                "search_docs", {**query, "top_k": 3, "cursor": structured(pages[0])["next_cursor"]}
            )
            return whole, pages, (again, other, pages[1])

    whole, pages, (again, other, second) = anyio.run(main)
    full = structured(whole)
    assert full.get("next_cursor") is None and len(full["results"]) == 12
    assert {r["library"] for r in full["results"]} == {"a", "b"}
    assert 2 < len(pages) < 40
    joined: dict[int, str] = {}
    for page in pages:
        answer = structured(page)
        assert answer["tokens"] <= 600
        for hit, block in zip(answer["results"], texts(page)[1:], strict=True):
            assert block.startswith(f"[{hit['rank']}] {hit['library']}@1.0 · ")
            joined[hit["rank"]] = joined.get(hit["rank"], "") + block.split("\n\n", 1)[1]
    expected = {
        hit["rank"]: block.split("\n\n", 1)[1] for hit, block in zip(full["results"], texts(whole)[1:], strict=True)
    }
    assert joined == expected
    assert any(hit.get("text_range") for page in pages for hit in structured(page)["results"])  # a result in parts
    assert texts(again) == texts(second)  # the same cursor gives the same page
    assert error_code(other) == "CONFIG_INVALID"  # a cursor of another request


def _changing_site(state: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A site whose pages (path -> {etag, text}) can change between requests; sitemap of them."""

    def page(path: str) -> Any:
        def behaviour(handler: Any, served: Any, count: int) -> None:
            current = state.get(path)
            if current is None:
                send(handler, 404, b"gone")
                return
            headers = {"ETag": current["etag"]}
            if handler.headers.get("If-None-Match") == current["etag"]:
                send(handler, 304, b"", "text/html", headers)
                return
            html = (
                f"<html><head><title>{path}</title></head><body><h1>{path}</h1><p>{current['text']}</p></body></html>"
            )
            send(handler, 200, html.encode(), "text/html", headers)

        return behaviour

    def sitemap(handler: Any, served: Any, count: int) -> None:
        urls = "".join(f"<url><loc>{served.base}{p}</loc></url>" for p in sorted(state))
        xml = f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        send(handler, 200, xml.encode(), "application/xml")

    return {"/sitemap.xml": sitemap, **{p: page(p) for p in ("/a.html", "/b.html", "/c.html")}}


def test_a_remote_library_is_refreshed_conditionally_and_swapped_with_removed_pages_gone(
    tmp_path: Path, runs_dir: Path
):
    state = {
        f"/{name}.html": {"etag": f'"{name}1"', "text": f"The {name} page explains the widget's {name} lever in words."}
        for name in "abc"
    }
    with serve_script(_changing_site(state)) as site:
        config = tmp_path / "site.json"
        source = {"type": "sitemap", "url": f"{site.base}/sitemap.xml"}
        cfg = {
            "connect": {"sources": [source], "allowed_private_hosts": [f"127.0.0.1:{site.port}"]},
            "normalize": {"chunk_strategy": "by_heading"},
            "index": {"embedding_model": "hash"},
        }
        config.write_text(json.dumps(cfg), encoding="utf-8")
        entry = parse_library_flag(f"site@1.0={config}")
        # An unchanged site: the refresh costs one conditional request per page and is discarded.
        registry = LibraryRegistry(runs_dir, [entry], embedding_model="hash")
        (library,) = registry.libraries()
        first = library.run_id()
        asked = len(site.requests)
        assert library.remote() and not library.refresh_due()
        assert registry.refresh_due(now=time.time() + 7200) == ["site@1.0"]
        again = [(r["path"], r["status"]) for r in site.requests[asked:]]
        assert library.run_id() == first and library.refreshes == 1
        pages = [("/a.html", 304), ("/b.html", 304), ("/c.html", 304)]
        assert sorted(again) == [*pages, ("/robots.txt", 404), ("/sitemap.xml", 200)]
        assert sorted(p.name for p in runs_dir.iterdir() if is_run_id(p.name)) == [first]  # nothing piled up
        registry.stop()

        # Served over MCP with a short interval: a changed page and a removed one.
        options = ServerOptions(runs_dir=runs_dir, libraries=[entry], embedding_model="hash", refresh_interval_s=0.3)
        server, _ = create_server(options)

        async def main() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with Client(server) as client:
                out["before"] = structured(await client.call_tool("list_libraries", {}))["libraries"][0]
                state["/a.html"] = {"etag": '"a2"', "text": "The a page now explains the widget's new turbo lever."}
                del state["/c.html"]

                async def refreshed() -> dict[str, Any] | None:
                    now = structured(await client.call_tool("list_libraries", {}))["libraries"][0]
                    return now if now["run_id"] != first else None

                out["after"] = await wait_for_async(refreshed, timeout=60, interval=0.1)
                assert out["after"] is not None, "the library was not refreshed in 60 s"
                out["pages"] = structured(await client.call_tool("list_pages", {"library": "site"}))["pages"]
                a = f"{site.base}/a.html"
                out["a"] = "\n".join(texts(await client.call_tool("get_page", {"library": "site", "path": a})))
                c = f"{site.base}/c.html"
                out["c"] = error_code(await client.call_tool("get_page", {"library": "site", "path": c}))
                out["search"] = structured(await client.call_tool("search_docs", {"query": "turbo lever"}))
            return out

        out = anyio.run(main)
    assert out["before"]["run_id"] == first and out["before"]["checked_at"] is not None
    assert out["after"]["pages"] == 2
    assert [p["path"] for p in out["pages"]] == [f"{site.base}/a.html", f"{site.base}/b.html"]
    assert "new turbo lever" in out["a"]
    assert out["c"] == "NOT_FOUND"  # removed from the site: really gone
    assert out["search"]["searched"][0]["run_id"] == out["after"]["run_id"]
    assert read_json(RunLayout(runs_dir / out["after"]["run_id"]).manifest)["base_run_id"] == first
