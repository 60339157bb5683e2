"""Crawl sources against real HTTP servers on 127.0.0.1: the mkdocs site without its sitemap,
scope and limits, canonical URLs, robots.txt, conditional reruns and removals."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from tests.integration.connect_servers import body, serve_script, serve_site, status
from tests.integration.test_connect_sitemap import SITE, remote_config, rows, run_connect


def _sitemap_urls(site_root: Path, base: str) -> list[str]:
    text = (site_root / "sitemap.xml").read_text(encoding="utf-8")
    return sorted(u.replace("https://www.mkdocs.org", base) for u in re.findall(r"<loc>\s*([^<\s]+)\s*</loc>", text))


def _crawl(url: str, **options: Any) -> dict[str, Any]:
    return {"type": "crawl", "url": url, **options}


def test_crawling_the_mkdocs_site_without_a_sitemap_finds_exactly_the_pages_its_sitemap_lists(
    corpora: Path, runs_dir: Path
):
    root = corpora / SITE
    with serve_site(root, sitemap=False) as site:
        source = _crawl(f"{site.base}/", max_depth=10, max_pages=1000, requests_per_second=200)
        one, phase_one = run_connect(runs_dir, remote_config([source], concurrency=1))
        fetched_once = [r["path"] for r in site.requests if r["path"].endswith(".html")]
        three, phase_three = run_connect(runs_dir, remote_config([source], concurrency=4))
    uris = [r["uri"] for r in rows(one)]
    assert uris == _sitemap_urls(root, site.base)
    assert len(fetched_once) == len(set(fetched_once))  # no URL requested twice
    assert phase_one["status"] == "completed" and phase_one["errors"] == []
    assert {r["source_kind"] for r in rows(one)} == {"crawl"}
    # byte-identical whatever the concurrency
    assert one.raw_manifest.read_bytes() == three.raw_manifest.read_bytes()
    assert phase_one["stats"] == phase_three["stats"]


def _page(*links: str, canonical: str | None = None, title: str = "page") -> bytes:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><head><title>{title}</title>{head}</head><body><p>{title}</p>{anchors}</body></html>".encode()


def _html(data: bytes, **headers: str) -> Any:
    return body(data, "text/html; charset=utf-8", headers or None)


def test_fragments_tracking_parameters_and_canonical_links_make_one_page_one_record(runs_dir: Path):
    routes = {
        "/docs/": _html(_page("a.html#intro", "a.html?utm_source=x", "b.html", "/docs/b.html?fbclid=1", "c.html")),
        "/docs/a.html": _html(_page("/docs/", title="a")),
        "/docs/b.html": _html(_page(title="b")),
        # c.html declares b.html as its canonical page: one record, under b's URL
        "/docs/c.html": _html(_page(canonical="/docs/b.html", title="c")),
    }
    with serve_script(routes) as site:
        layout, phase = run_connect(runs_dir, remote_config([_crawl(f"{site.base}/docs/")]))
        asked = sorted(r["path"] for r in site.requests if r["path"].startswith("/docs"))
    assert [r["uri"] for r in rows(layout)] == [f"{site.base}/docs/{p}" for p in ("", "a.html", "b.html")]
    assert asked == ["/docs/", "/docs/a.html", "/docs/b.html", "/docs/c.html"]
    assert phase["errors"] == []


def test_scope_depth_patterns_and_max_pages_bound_the_crawl_deterministically(runs_dir: Path):
    routes = {
        "/docs/index.html": _html(_page("l1a.html", "l1b.html", "/other/x.html", "skip-me.html", "style.css")),
        "/docs/l1a.html": _html(_page("l2a.html")),
        "/docs/l1b.html": _html(_page("l2b.html")),
        "/docs/l2a.html": _html(_page("l3.html")),
        "/docs/l2b.html": _html(_page()),
        "/docs/l3.html": _html(_page()),
        "/docs/skip-me.html": _html(_page()),
        "/other/x.html": _html(_page()),
    }
    with serve_script(routes) as site:
        start = f"{site.base}/docs/index.html"
        prefix, _ = run_connect(
            runs_dir, remote_config([_crawl(start, scope="prefix", max_depth=2, exclude_patterns=["skip-me"])])
        )
        host, _ = run_connect(runs_dir, remote_config([_crawl(start, max_depth=1)]))
        capped, _ = run_connect(runs_dir, remote_config([_crawl(start, scope="prefix", max_pages=3)]))
        assert "/docs/style.css" not in {r["path"] for r in site.requests}
    base = f"{site.base}/docs/"
    assert [r["uri"] for r in rows(prefix)] == [
        base + p for p in ("index.html", "l1a.html", "l1b.html", "l2a.html", "l2b.html")
    ]
    assert [r["uri"] for r in rows(host)] == sorted(
        [base + p for p in ("index.html", "l1a.html", "l1b.html", "skip-me.html")] + [f"{site.base}/other/x.html"]
    )
    # breadth-first, then sorted: the start page and the first two of level 1
    assert [r["uri"] for r in rows(capped)] == [base + p for p in ("index.html", "l1a.html", "l1b.html")]


def test_robots_txt_disallowed_pages_are_never_requested(runs_dir: Path):
    routes = {
        "/robots.txt": body(b"User-agent: *\nDisallow: /private/\n"),
        "/": _html(_page("/public.html", "/private/secret.html")),
        "/public.html": _html(_page()),
        "/private/secret.html": _html(_page()),
    }
    with serve_script(routes) as site:
        layout, _ = run_connect(runs_dir, remote_config([_crawl(f"{site.base}/")]))
        assert "/private/secret.html" not in {r["path"] for r in site.requests}
    assert [r["uri"] for r in rows(layout)] == [f"{site.base}/", f"{site.base}/public.html"]


def test_a_rerun_on_a_base_revalidates_pages_and_a_page_now_gone_is_removed(runs_dir: Path):
    routes: dict[str, Any] = {
        "/": _html(_page("/a.html", "/b.html"), ETag='"root"'),
        "/a.html": _html(_page(title="a"), ETag='"a"'),
        "/b.html": _html(_page(title="b"), ETag='"b"'),
    }
    with serve_script(routes) as site:
        config = remote_config([_crawl(f"{site.base}/")])
        first, _ = run_connect(runs_dir, config)
        routes["/b.html"] = status(410)
        before = len(site.requests)
        second, phase = run_connect(runs_dir, config, base_layout=first)
        again = site.requests[before:]
    assert {r["path"]: r["status"] for r in again if r["path"] != "/robots.txt"} == {
        "/": 304,
        "/a.html": 304,
        "/b.html": 410,
    }
    assert phase["details"]["removed"] == [f"{site.base}/b.html"]
    assert phase["stats"]["not_modified"] == 2
    assert [r["uri"] for r in iter_jsonl(second.raw_manifest)] == [f"{site.base}/", f"{site.base}/a.html"]


def test_a_crawled_site_goes_through_every_phase_and_its_pages_are_searchable(runs_dir: Path):
    from indexfoundry.app.serving import write_openapi
    from indexfoundry.pipeline.runner import create_run, execute, new_run_id
    from indexfoundry.storage.layout import RunLayout

    routes = {
        "/": _html(_page("/install.html", title="Widget docs")),
        "/install.html": _html(_page(title="Installing the widget needs a flux capacitor")),
    }
    with serve_script(routes) as site:
        config = remote_config([_crawl(f"{site.base}/")])
        layout = RunLayout.for_run(runs_dir, new_run_id())
        create_run(layout, config)
        output = execute(layout, config, openapi_writer=write_openapi)
    assert output.status == "completed"
    uris = {row["source"]["uri"] for row in iter_jsonl(layout.chunks)}
    assert uris == {f"{site.base}/", f"{site.base}/install.html"}


def test_a_directory_and_its_index_html_are_one_page_counted_as_a_duplicate_by_the_cli(tmp_path: Path):
    import json
    import subprocess
    import sys

    from tests.conftest import write_config

    home = _page("index.html", "guide/", "guide/index.html#top", title="home")
    guide = _page("../index.html", title="guide")
    routes = {"/": _html(home), "/index.html": _html(home), "/guide/": _html(guide), "/guide/index.html": _html(guide)}
    with serve_script(routes) as site:
        source = {"type": "crawl", "url": f"{site.base}/", "requests_per_second": 100}
        connect = {"sources": [source], "allowed_private_hosts": [f"127.0.0.1:{site.port}"]}
        config = write_config(tmp_path / "site.yaml", {"connect": connect, "index": {"embedding_model": "hash"}})
        done = subprocess.run(
            [sys.executable, "-m", "indexfoundry", "pipeline", "run", str(config), "--runs-dir", "runs", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    layout = RunLayout(Path("runs") / json.loads(done.stdout)["run_id"])
    assert [r["uri"] for r in rows(layout)] == [f"{site.base}/", f"{site.base}/guide/"]
    crawl = json.loads(layout.manifest.read_text())["phases"]["connect"]["details"]["crawl"][f"{site.base}/"]
    assert (crawl["pages"], crawl["duplicates"]) == (2, 2)  # /index.html and /guide/index.html
