"""Crawling real sitemaps served on 127.0.0.1: the mkdocs site, conditional reruns, discovery rules."""

from __future__ import annotations

import gzip
import http.server
import threading
from pathlib import Path
from typing import Any

import pytest

from indexfoundry.models.config import PipelineConfig, parse_pipeline_config
from indexfoundry.pipeline.runner import create_run, execute, new_run_id
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout
from tests.integration.connect_servers import Served, body, serve_script, serve_site, status

SITE = "html/mkdocs-1.4.2-site"


def remote_config(sources: list[dict[str, Any]], **connect: Any) -> PipelineConfig:
    """A pipeline config over remote sources served from 127.0.0.1 (private networks opted in)."""
    return parse_pipeline_config(
        {
            "connect": {"sources": sources, "allow_private_networks": True, "timeout_ms": 1000, **connect},
            "index": {"embedding_model": "hash"},
        }
    )


def run_connect(
    runs_dir: Path, config: PipelineConfig, layout: RunLayout | None = None, **kwargs: Any
) -> tuple[RunLayout, dict[str, Any]]:
    """Run only the connect phase; return the layout and its phase manifest."""
    if layout is None:
        layout = RunLayout.for_run(runs_dir, new_run_id())
        create_run(layout, config)
    execute(layout, config, phases=["connect"], **kwargs)
    return layout, read_json(layout.manifest)["phases"]["connect"]


def rows(layout: RunLayout) -> list[dict[str, Any]]:
    return list(iter_jsonl(layout.raw_manifest))


def test_mkdocs_site_is_crawled_through_its_real_sitemap_and_all_19_pages_are_stored(corpora: Path, runs_dir: Path):
    with serve_site(corpora / SITE) as site:
        layout, phase = run_connect(runs_dir, remote_config([{"type": "sitemap", "url": f"{site.base}/sitemap.xml"}]))
    records = rows(layout)
    assert phase["status"] == "completed" and phase["errors"] == []
    assert len(records) == 19 and site.bodies_sent() == 19
    assert [r["uri"] for r in records] == sorted(r["uri"] for r in records)
    assert {r["content_type"] for r in records} == {"text/html"}
    assert all(r["path"] == f"raw/{r['sha256']}.html" and (layout.root / r["path"]).is_file() for r in records)
    assert all(r["last_modified"] for r in records)
    assert f"{site.base}/user-guide/configuration.html" in {r["uri"] for r in records}
    assert "fetched_at" not in records[0]
    assert set(phase["details"]["fetched_at"]) == {r["uri"] for r in records}
    assert phase["stats"]["urls_discovered"] == 19 and phase["stats"]["bodies_fetched"] == 19


def test_a_run_based_on_the_previous_one_revalidates_all_19_pages_and_downloads_no_body(corpora: Path, runs_dir: Path):
    with serve_site(corpora / SITE) as site:
        config = remote_config([{"type": "sitemap", "url": f"{site.base}/sitemap.xml"}])
        first, _ = run_connect(runs_dir, config)
        before = len(site.requests)
        second, phase = run_connect(runs_dir, config, base_layout=first)
        page_requests = [r for r in site.requests[before:] if r["path"].endswith(".html")]
    assert len(page_requests) == 19
    assert all(r["status"] == 304 and "if-modified-since" in r["headers"] for r in page_requests)
    assert site.bodies_sent() == 19  # all from the first run
    assert phase["stats"]["bodies_fetched"] == 0 and phase["stats"]["not_modified"] == 19
    # the artifacts were copied from the base run: same bytes, same manifest
    assert second.raw_manifest.read_bytes() == first.raw_manifest.read_bytes()
    assert all((second.root / r["path"]).is_file() for r in rows(second))


def test_a_forced_rerun_in_place_sends_conditional_requests_and_keeps_the_artifacts(corpora: Path, runs_dir: Path):
    with serve_site(corpora / SITE) as site:
        config = remote_config([{"type": "sitemap", "url": f"{site.base}/sitemap.xml"}])
        layout, first = run_connect(runs_dir, config)
        manifest_before = layout.raw_manifest.read_bytes()
        _, skipped = run_connect(runs_dir, config, layout)  # unchanged config: connect is skipped
        assert skipped["started_at"] == first["started_at"]
        assert site.bodies_sent() == 19
        _, phase = run_connect(runs_dir, config, layout, force_phases=["connect"])
    assert phase["stats"]["not_modified"] == 19 and phase["stats"]["bodies_fetched"] == 0
    assert site.bodies_sent() == 19
    assert layout.raw_manifest.read_bytes() == manifest_before
    assert all((layout.root / r["path"]).is_file() for r in rows(layout))


def test_gzipped_sitemap_and_robots_txt_discovery_find_the_same_19_pages(corpora: Path, runs_dir: Path):
    with serve_site(corpora / SITE) as site:
        gz, _ = run_connect(runs_dir, remote_config([{"type": "sitemap", "url": f"{site.base}/sitemap.xml.gz"}]))
        root, phase = run_connect(runs_dir, remote_config([{"type": "sitemap", "url": f"{site.base}/"}]))
        assert "/robots.txt" in {r["path"] for r in site.requests}
    assert [r["uri"] for r in rows(gz)] == [r["uri"] for r in rows(root)]
    assert len(rows(root)) == 19 and phase["errors"] == []


def _urlset(*urls: str) -> bytes:
    body = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'.encode()


def _index(*urls: str) -> bytes:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in urls)
    return f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</sitemapindex>'.encode()


def test_nested_indexes_patterns_robots_and_max_pages_select_a_deterministic_sorted_subset(runs_dir: Path):
    page = body(b"# page\n\nhello\n", "text/markdown")
    routes: dict[str, Any] = {f"/docs/{n}.md": page for n in ("a", "b", "c", "d", "skip-me")}
    routes["/private/secret.md"] = page
    with serve_script(routes) as server:
        base = server.base
        routes["/robots.txt"] = body(b"User-agent: *\nDisallow: /private/\n")
        routes["/index.xml"] = body(_index(f"{base}/inner.xml", f"{base}/pages.xml.gz"), "application/xml")
        routes["/inner.xml"] = body(_index(f"{base}/more.xml", f"{base}/index.xml"), "application/xml")  # a cycle
        routes["/more.xml"] = body(_urlset(f"{base}/docs/d.md", f"{base}/private/secret.md"), "application/xml")
        urls = [f"{base}/docs/{n}.md" for n in ("c", "skip-me", "a", "b")]
        routes["/pages.xml.gz"] = body(gzip.compress(_urlset(*urls), mtime=0), "application/gzip")
        source = {
            "type": "sitemap",
            "url": f"{base}/index.xml",
            "max_pages": 3,
            "include_patterns": [r"\.md$"],
            "exclude_patterns": ["skip-me"],
        }
        layout, phase = run_connect(runs_dir, remote_config([source]))
        asked = {r["path"] for r in server.requests}
    assert [r["uri"] for r in rows(layout)] == [f"{base}/docs/{n}.md" for n in ("a", "b", "c")]
    assert "/private/secret.md" not in asked and "/docs/d.md" not in asked and "/docs/skip-me.md" not in asked
    assert phase["stats"]["urls_discovered"] == 6
    assert {r["content_type"] for r in rows(layout)} == {"text/markdown"}


def test_a_known_page_that_now_answers_404_is_reported_removed_and_dropped(runs_dir: Path):
    routes: dict[str, Any] = {
        "/a.md": body(b"# A\n", "text/markdown", {"ETag": '"a1"'}),
        "/b.md": body(b"# B\n", "text/markdown", {"ETag": '"b1"'}),
    }
    with serve_script(routes) as server:
        config = remote_config(
            [{"type": "url", "url": f"{server.base}/a.md"}, {"type": "url", "url": f"{server.base}/b.md"}]
        )
        layout, _ = run_connect(runs_dir, config)
        assert len(rows(layout)) == 2
        routes["/b.md"] = status(410)
        routes["/a.md"] = body(b"# A\n", "text/markdown", {"ETag": '"a1"'})
        _, phase = run_connect(runs_dir, config, layout, force_phases=["connect"])
        second_a = [r for r in server.requests if r["path"] == "/a.md"][-1]
    assert [r["uri"] for r in rows(layout)] == [f"{server.base}/a.md"]
    assert phase["details"]["removed"] == [f"{server.base}/b.md"]
    assert phase["errors"] == [] and phase["stats"]["removed"] == 1
    assert second_a["headers"].get("if-none-match") == '"a1"'


@pytest.mark.parametrize("robots", [True, False])
def test_respect_robots_txt_is_configurable(runs_dir: Path, robots: bool):
    routes: dict[str, Any] = {"/robots.txt": body(b"User-agent: *\nDisallow: /\n"), "/p.md": body(b"# P\n")}
    with serve_script(routes) as server:
        routes["/s.xml"] = body(_urlset(f"{server.base}/p.md"), "application/xml")
        config = remote_config([{"type": "sitemap", "url": f"{server.base}/s.xml"}], respect_robots_txt=robots)
        layout, _ = run_connect(runs_dir, config)
    assert len(rows(layout)) == (0 if robots else 1)


def test_a_server_hiccup_on_rerun_keeps_the_previous_pages_and_reports_the_errors(runs_dir: Path):
    routes: dict[str, Any] = {"/a.md": body(b"# A\n", "text/markdown", {"ETag": '"a1"'})}
    with serve_script(routes) as server:
        routes["/s.xml"] = body(_urlset(f"{server.base}/a.md"), "application/xml")
        config = remote_config([{"type": "sitemap", "url": f"{server.base}/s.xml"}], max_retries=0)
        layout, _ = run_connect(runs_dir, config)
        manifest_before = layout.raw_manifest.read_bytes()
        routes["/s.xml"] = status(503)
        routes["/a.md"] = status(502)
        _, phase = run_connect(runs_dir, config, layout, force_phases=["connect"])
    assert layout.raw_manifest.read_bytes() == manifest_before
    assert phase["details"]["stale"] == [f"{server.base}/a.md"]
    assert sorted(e["uri"] for e in phase["errors"]) == [f"{server.base}/a.md", f"{server.base}/s.xml"]
    assert {e["code"] for e in phase["errors"]} == {"FETCH_FAILED"}


def test_no_more_than_the_configured_number_of_fetches_are_in_flight(runs_dir: Path):
    lock = threading.Lock()
    state = {"now": 0, "most": 0}

    def held(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        served.release.wait(0.15)  # hold the request so that overlapping fetches would show
        with lock:
            state["now"] -= 1
        body(b"# page\n", "text/markdown")(handler, served, count)

    routes: dict[str, Any] = {f"/{n}.md": held for n in range(8)}
    with serve_script(routes) as server:
        sources = [{"type": "url", "url": f"{server.base}/{n}.md"} for n in range(8)]
        layout, _ = run_connect(runs_dir, remote_config(sources, concurrency=2))
    assert len(rows(layout)) == 8
    assert state["most"] == 2
