"""The connect tools on an existing run: library calls, the CLI subcommands, and the run they leave."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from indexfoundry.app.tools.connect import ConnectRepoOutput
from indexfoundry.app.tools.registry import call_tool, load_tools
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import parse_pipeline_config
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from indexfoundry.storage.manifest import artifacts_verify, load_manifest, load_run_config
from tests.conftest import SAMPLE_DOCS, folder_config, write_tree
from tests.integration.connect_servers import body, serve_script, serve_site


@pytest.fixture
def run(tree, runs_dir: Path) -> RunLayout:
    """A run whose connect phase has completed over a folder; its config lets tools reach 127.0.0.1."""
    raw = folder_config(tree(SAMPLE_DOCS))
    raw["connect"]["allow_private_networks"] = True
    raw["connect"]["timeout_ms"] = 1000
    config = parse_pipeline_config(raw)
    layout = RunLayout.for_run(runs_dir, new_run_id())
    create_run(layout, config)
    execute(layout, config, phases=["connect"])
    return layout


def uris(layout: RunLayout) -> list[str]:
    return [r["uri"] for r in iter_jsonl(layout.raw_manifest)]


def tool(name: str, layout: RunLayout, **arguments: Any) -> Any:
    return call_tool(f"indexfoundry_connect_{name}", {"run_id": layout.run_id, **arguments}, runs_dir=layout.runs_dir)


def test_the_four_connect_tools_are_registered_with_honest_annotations():
    tools = load_tools()
    for name in ("url", "sitemap", "folder", "pdf", "crawl", "llms_txt", "repo"):
        spec = tools[f"indexfoundry_connect_{name}"]
        assert not spec.annotations.read_only and not spec.annotations.destructive and spec.annotations.idempotent
        assert spec.input_model.model_json_schema()["additionalProperties"] is False
    assert not tools["indexfoundry_connect_folder"].annotations.open_world
    assert tools["indexfoundry_connect_url"].annotations.open_world
    assert all(tools[f"indexfoundry_connect_{n}"].annotations.open_world for n in ("crawl", "llms_txt", "repo"))


def test_connect_url_merges_into_the_run_sorted_skips_when_present_and_revalidates_with_force(run: RunLayout):
    before = uris(run)
    with serve_script({"/page.md": body(b"# Remote\n\nA page.\n", "text/markdown", {"ETag": '"v1"'})}) as server:
        url = f"{server.base}/page.md"
        first = tool("url", run, url=url)
        again = tool("url", run, url=url)
        forced = tool("url", run, url=url, force=True)
        statuses = server.statuses("/page.md")
    assert first.success and not first.skipped and first.artifact.content_type == "text/markdown"
    assert Path(first.artifact.path).read_bytes() == b"# Remote\n\nA page.\n"
    assert again.skipped and again.artifact.sha256 == first.artifact.sha256
    assert forced.not_modified and statuses == [200, 304]
    assert uris(run) == sorted([*before, url])
    # the run stays consistent: connect's manifest lists the new artifact, so a rerun keeps it
    assert artifacts_verify(run, load_manifest(run).phases["connect"].artifacts)
    rerun = execute(run, load_run_config(run), phases=["connect"])
    assert rerun.phases["connect"].status == "skipped" and url in uris(run)


def test_connect_url_tool_arguments_narrow_but_never_widen_the_runs_policy(run: RunLayout):
    with serve_script({"/p": body(b"x")}) as server:
        with pytest.raises(IndexFoundryError) as caught:
            tool("url", run, url=f"{server.base}/p", allowed_domains=["docs.example.org"])
        assert caught.value.code == "DOMAIN_BLOCKED" and server.requests == []
        with pytest.raises(IndexFoundryError) as scheme:
            tool("url", run, url="file:///etc/passwd")
    assert scheme.value.code == "DOMAIN_BLOCKED"
    with pytest.raises(IndexFoundryError) as bad:
        tool("url", run, url="http://x", timeout_ms=10)
    assert bad.value.code == "CONFIG_INVALID"


def test_connect_sitemap_tool_fetches_the_mkdocs_site_then_skips_what_the_run_has(corpora: Path, run: RunLayout):
    with serve_site(corpora / "html/mkdocs-1.4.2-site") as site:
        first = tool("sitemap", run, sitemap_url=f"{site.base}/sitemap.xml", max_pages=10000)
        second = tool("sitemap", run, sitemap_url=f"{site.base}/sitemap.xml", max_pages=10000)
        forced = tool("sitemap", run, sitemap_url=f"{site.base}/sitemap.xml", max_pages=5, force=True)
    assert first.success and first.urls_discovered == 19 and first.urls_fetched == 19 and first.urls_failed == 0
    assert [a.url for a in first.artifacts] == sorted(a.url for a in first.artifacts)
    assert second.urls_fetched == 0 and second.urls_skipped == 19
    assert forced.urls_fetched == 5 and forced.urls_not_modified == 5 and forced.urls_skipped == 14
    assert site.bodies_sent() == 19
    assert len([u for u in uris(run) if u.startswith(site.base)]) == 19


def test_connect_folder_tool_copies_new_files_and_skips_unchanged_ones(tree, run: RunLayout):
    extra = tree({"notes/a.md": "# A\n", "notes/b.txt": "b", "notes/big.md": "x" * 200_000}, name="more")
    out = tool("folder", run, path=str(extra), glob="**/*.md", max_file_size_mb=0.1)
    again = tool("folder", run, path=str(extra), glob="**/*.md", max_file_size_mb=0.1)
    assert out.files_copied == 1 and out.files_failed == 1 and out.errors[0].code == "FILE_TOO_LARGE"
    assert [a.uri for a in out.artifacts] == ["more/notes/a.md"]
    assert again.files_copied == 0 and again.files_skipped == 1
    assert "more/notes/a.md" in uris(run) and "more/notes/b.txt" not in uris(run)


def test_connect_pdf_reports_pages_version_text_layer_and_metadata(corpora: Path, run: RunLayout):
    born_digital = tool("pdf", run, source=str(corpora / "pdf/multicolumn/i1040nr.pdf"))
    scanned = tool("pdf", run, source=str(corpora / "pdf/scanned/skew.pdf"))
    again = tool("pdf", run, source=str(corpora / "pdf/multicolumn/i1040nr.pdf"))
    art = born_digital.artifact
    assert (art.page_count, art.pdf_version, art.has_ocr_layer) == (50, "1.6", True)
    assert art.metadata.title == "2007 Instruction 1040-NR"
    assert art.metadata.created == "2007-12-06T08:01:23-05:00"
    assert scanned.artifact.has_ocr_layer is False
    assert again.skipped and again.artifact.sha256 == art.sha256
    assert {"i1040nr.pdf", "skew.pdf"} <= set(uris(run))


def test_connect_pdf_over_http_checks_the_bytes_are_a_pdf(corpora: Path, run: RunLayout):
    pdf = (corpora / "pdf/edge/simple1.pdf").read_bytes()
    with serve_script({"/f": body(pdf, "application/octet-stream"), "/h": body(b"<html></html>", "text/html")}) as s:
        out = tool("pdf", run, source=f"{s.base}/f")
        with pytest.raises(IndexFoundryError) as caught:
            tool("pdf", run, source=f"{s.base}/h")
    assert out.artifact.page_count == 1 and out.artifact.path.endswith(".pdf")
    assert caught.value.code == "PARSE_ERROR"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_connect_url_prints_json_and_blocked_urls_exit_1_with_the_code(run: RunLayout):
    with serve_script({"/p.txt": body(b"plain text")}) as server:
        done = cli(
            "connect", "url", f"{server.base}/p.txt", "--run-id", run.run_id, "--runs-dir", str(run.runs_dir), "--json"
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["artifact"]["content_type"] == "text/plain"
    blocked = cli(
        "connect", "url", "gopher://example.org/", "--run-id", run.run_id, "--runs-dir", str(run.runs_dir), "--json"
    )
    assert blocked.returncode == 1 and "Traceback" not in blocked.stderr
    assert json.loads(blocked.stdout)["error"]["code"] == "DOMAIN_BLOCKED"


# ---------------------------------------------------------------- crawl, llms_txt and repo tools
def _tiny_site() -> dict[str, Any]:
    page = "<html><body><h1>{0}</h1><p>The {0} page of the widget docs.</p>{1}</body></html>"
    links = '<a href="/a.html">a</a> <a href="/b.html">b</a>'
    return {
        "/": body(page.format("Home", links).encode(), "text/html", {"ETag": '"home"'}),
        "/a.html": body(page.format("A", "").encode(), "text/html", {"ETag": '"a"'}),
        "/b.html": body(page.format("B", "").encode(), "text/html", {"ETag": '"b"'}),
        "/llms.txt": body(b"# Widget\n\n> Docs.\n\n- [A](/a.html): page a\n", "text/markdown"),
    }


def test_connect_crawl_and_llms_txt_tools_merge_pages_into_the_run_and_revalidate(run: RunLayout):
    before = uris(run)
    with serve_script(_tiny_site()) as site:
        crawled = tool("crawl", run, url=f"{site.base}/", max_depth=1)
        again = tool("crawl", run, url=f"{site.base}/", max_depth=1)
        llms = tool("llms_txt", run, url=f"{site.base}/", prefer_markdown=False)
    pages = [f"{site.base}/{p}" for p in ("", "a.html", "b.html")]
    assert crawled.success and crawled.pages_stored == 3 and [a.url for a in crawled.artifacts] == pages
    assert crawled.summary["depth_reached"] == 1
    assert again.not_modified == 3  # every page revalidated with a 304
    assert llms.success and f"{site.base}/a.html" in [a.url for a in llms.artifacts]
    assert uris(run) == sorted({*before, *pages, f"{site.base}/llms.txt"})
    assert artifacts_verify(run, load_manifest(run).phases["connect"].artifacts)


def test_connect_repo_tool_reads_a_ref_and_drops_files_deleted_since(tmp_path: Path, run: RunLayout):
    from tests.integration.test_connect_repo import _doc, git

    repo = write_tree(tmp_path / "widget", {"docs/keep.md": _doc("Keep"), "docs/gone.md": _doc("Gone")})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    first = tool("repo", run, path=str(repo), glob="docs/**/*.md")
    git(repo, "rm", "-q", "docs/gone.md")
    git(repo, "commit", "-qm", "two")
    done = cli(
        "connect",
        "repo",
        str(repo),
        "--run-id",
        run.run_id,
        "--runs-dir",
        str(run.runs_dir),
        "--glob",
        "docs/**/*.md",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    second = ConnectRepoOutput.model_validate_json(done.stdout)
    assert first.files == 2 and first.commit != second.commit
    assert second.removed == ["widget/docs/gone.md"] and second.files == 1
    assert "widget/docs/keep.md" in uris(run) and "widget/docs/gone.md" not in uris(run)


def test_an_agent_reaches_no_private_host_through_an_operators_run_and_no_repo_outside_the_roots(
    tmp_path: Path, run: RunLayout
):
    """The run's config allows private networks (the operator's); the MCP server's policy does not."""
    import anyio
    from mcp.client import Client

    from indexfoundry.surfaces.mcp import ServerOptions, create_server
    from tests.integration.mcp_support import error_code, structured

    def serve(*private_hosts: str) -> Any:
        options = ServerOptions(
            runs_dir=run.runs_dir, roots=[tmp_path], allowed_private_hosts=list(private_hosts), tools="all"
        )
        return create_server(options)[0]

    async def call(server: Any, name: str, arguments: dict[str, Any]) -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, {"run_id": run.run_id, **arguments})

    with serve_script(_tiny_site()) as site:
        url = f"{site.base}/"
        refused = anyio.run(call, serve(), "indexfoundry_connect_crawl", {"url": url})
        asked = len(site.requests)
        allowed = serve(f"127.0.0.1:{site.port}")
        crawled = anyio.run(call, allowed, "indexfoundry_connect_crawl", {"url": url, "max_depth": 0})
        llms = anyio.run(call, serve(), "indexfoundry_connect_llms_txt", {"url": url})
    outside = anyio.run(call, serve(), "indexfoundry_connect_repo", {"path": "/etc"})
    remote = anyio.run(call, serve(), "indexfoundry_connect_repo", {"url": "file:///etc/x.git"})

    def code(result: Any) -> str:  # the tool failed, or the pages it could not fetch did
        return error_code(result) if result.is_error else structured(result)["errors"][0]["code"]

    assert code(refused) == "DOMAIN_BLOCKED" and asked == 0  # nothing was sent to the site
    assert structured(crawled)["pages_stored"] == 1
    assert code(llms) == "DOMAIN_BLOCKED"
    assert error_code(outside) == "NOT_FOUND"
    assert error_code(remote) == "CONFIG_INVALID"  # the agent's repo url is http(s) only: its schema refuses file://
